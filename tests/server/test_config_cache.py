"""server.config_cache: the theme sections are read once per configuration, and any change to an
option (or a re-read of the config) is seen at once."""

from types import SimpleNamespace

import pytest

from server import config_cache


def make(options):
    """A SectionCache over a fake config: `options` maps section -> {name: value}."""
    reads = []
    holder = SimpleNamespace(options=options)

    def read(section):
        reads.append(section)
        return dict(holder.options.get(section, {}))

    return config_cache.SectionCache(read, lambda: holder.options), reads, holder


def test_a_theme_section_is_read_once_and_each_caller_gets_its_own_copy():
    cache, reads, _ = make({"theme": {"primaryColor": "#0072B2"}})
    first = cache.get("theme")
    first["primaryColor"] = "changed by a caller"
    assert cache.get("theme") == {"primaryColor": "#0072B2"}
    assert reads == ["theme"]


def test_other_sections_are_read_every_time():
    cache, reads, _ = make({"server": {"port": 8501}})
    cache.get("server")
    cache.get("server")
    assert reads == ["server", "server"]


def test_setting_an_option_forgets_the_kept_answers():
    cache, reads, holder = make({"theme": {"base": "light"}})
    assert cache.get("theme") == {"base": "light"}

    def set_option(key, value, where):
        holder.options["theme"][key.split(".")[-1]] = value

    cache.forgetting(set_option)("theme.base", "dark", "test")
    assert cache.get("theme") == {"base": "dark"}
    assert reads == ["theme", "theme"]


def test_a_new_options_dict_forgets_the_kept_answers():
    cache, reads, holder = make({"theme": {"base": "light"}})
    cache.get("theme")
    holder.options = {"theme": {"base": "dark"}}  # Streamlit re-read its config files
    assert cache.get("theme") == {"base": "dark"}


def test_installed_on_streamlit_the_theme_follows_set_option(monkeypatch):
    from streamlit import config

    monkeypatch.setattr(config, "get_options_for_section", config.get_options_for_section)
    monkeypatch.setattr(config, "_set_option", config._set_option)
    monkeypatch.setattr(config_cache.install.once, "installed", False)
    assert config_cache.install()
    assert isinstance(config.get_options_for_section("theme"), dict)
    before = config.get_option("theme.primaryColor")
    try:
        config.set_option("theme.primaryColor", "#123456")
        assert config.get_options_for_section("theme")["primaryColor"] == "#123456"
    finally:
        config.set_option("theme.primaryColor", before)
    assert config.get_options_for_section("theme")["primaryColor"] == before


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_CONFIG_CACHE", "0")
    monkeypatch.setattr(config_cache.install.once, "installed", False)
    assert config_cache.install() is False


@pytest.mark.parametrize("section", ["theme.light", "theme.dark.sidebar"])
def test_the_theme_sub_sections_are_kept_too(section):
    cache, reads, _ = make({section: {"primaryColor": "#000000"}})
    cache.get(section)
    cache.get(section)
    assert reads == [section]


def test_a_read_that_a_change_crossed_is_not_kept():
    """Streamlit's first read parses the config files, which sets options: that answer may
    already be out of date, so it is returned but not kept."""
    holder = SimpleNamespace(options={"theme": {"base": "light"}})
    reads = []
    cache = None

    def read(section):
        reads.append(section)
        answer = dict(holder.options[section])
        if len(reads) == 1:  # a set lands while this read is under way
            cache.forgetting(lambda: holder.options["theme"].update(base="dark"))()
        return answer

    cache = config_cache.SectionCache(read, lambda: holder.options)
    assert cache.get("theme") == {"base": "light"}  # what was read
    assert cache.get("theme") == {"base": "dark"}  # read again, not the crossed answer
    assert cache.get("theme") == {"base": "dark"} and len(reads) == 2
