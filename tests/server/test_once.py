"""server.once.Once: a change made once per process, under a lock, unless switched off."""

import threading

from server.once import Once


def test_applied_once_even_when_many_sessions_start_together():
    calls = []
    once = Once("ATTENTION_LAB_TEST_ONCE")
    start = threading.Barrier(8)

    def apply():
        calls.append(1)
        return True

    def session():
        start.wait()
        assert once.install(apply)

    threads = [threading.Thread(target=session) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1]


def test_a_change_that_could_not_be_made_is_tried_again():
    once, answers = Once("ATTENTION_LAB_TEST_ONCE"), iter([False, True])
    assert once.install(lambda: next(answers)) is False
    assert once.install(lambda: next(answers)) is True
    assert once.install(lambda: 1 / 0) is True  # made: never applied again


def test_switched_off(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_TEST_ONCE", " 0 ")
    assert Once("ATTENTION_LAB_TEST_ONCE").install(lambda: True) is False


def test_the_decorator_installs_once():
    from server.once import once_per_process

    calls = []

    @once_per_process("ATTENTION_LAB_TEST_ONCE")
    def install() -> bool:
        """Makes a change."""
        calls.append(1)
        return True

    assert install() and install() and calls == [1]
    assert install.__doc__ == "Makes a change." and install.once.installed
