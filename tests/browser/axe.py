"""axe-core in the browser tests: WCAG 2.1 A/AA checks of a page as Chromium renders it.

axe-core's own script comes inside the `axe-playwright-python` package (pinned in
requirements-dev.txt), so nothing is downloaded at test time. `violations(page)` injects it, runs
the WCAG 2.0/2.1 A and AA rules and returns what fails, less the elements that Streamlit itself
draws wrongly and that the project cannot change (`UPSTREAM`: a rule, exactly those elements, and
the Streamlit issue; the same list is in docs/ACCESSIBILITY.md). Any page, in any mode (a new
view such as a class mode only adds its URL to the browser test), can be checked with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from axe_playwright_python.base import AXE_SCRIPT

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@dataclass(frozen=True)
class Upstream:
    rule: str       # axe-core rule id
    selector: str   # the elements Streamlit draws that break it, and only those
    issue: str      # the Streamlit issue that tracks it


# Streamlit's sidebar navigation puts each section's heading and pages in a <div> inside its
# <ul>: the <ul> holds <div>s (axe: list) and the <li>s have no list parent (axe: listitem).
# No setting of st.navigation changes that markup; see docs/ACCESSIBILITY.md.
NAV_ISSUE = "https://github.com/streamlit/streamlit/issues/8399"
UPSTREAM: tuple[Upstream, ...] = (
    Upstream("list", "ul[data-testid='stSidebarNavItems']", NAV_ISSUE),
    Upstream("listitem", "ul[data-testid='stSidebarNavItems'] > div > li", NAV_ISSUE),
)

# runs axe, then drops each failing element that an Upstream entry names for that rule (only
# for that rule: the same element is still checked by every other rule)
RUN_AXE = """async ([tags, upstream]) => {
  const results = await axe.run(document, {runOnly: {type: "tag", values: tags},
                                           resultTypes: ["violations"]});
  const known = (id, node) => upstream.some(([rule, selector]) => {
    if (rule !== id) return false;
    const el = document.querySelector(node.target[node.target.length - 1]);
    return el !== null && el.matches(selector);
  });
  return results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.filter((n) => !known(v.id, n)).map((n) => ({
      target: n.target.join(" "), html: n.html.slice(0, 200),
      summary: (n.failureSummary || "").slice(0, 300)}))})).filter((v) => v.nodes.length);
}"""


def violations(page, upstream: tuple[Upstream, ...] = UPSTREAM) -> list[dict]:
    """The page's WCAG 2.1 A/AA violations as axe-core reports them (id, impact, help, nodes)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SCRIPT)
    return page.evaluate(RUN_AXE, [WCAG_21_AA, [[u.rule, u.selector] for u in upstream]])


def count_elements(found: list[dict]) -> dict[str, int]:
    """{rule id: number of failing elements}."""
    return {v["id"]: len(v["nodes"]) for v in found}


def report(found: list[dict]) -> str:
    """A readable list of the violations, one failing element a line (for assertion messages)."""
    lines = []
    for v in found:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']}")
        lines += [f"    {n['target']}  {n['html']}" for n in v["nodes"][:8]]
        if len(v["nodes"]) > 8:
            lines.append(f"    ... and {len(v['nodes']) - 8} more")
    return "\n".join(lines)
