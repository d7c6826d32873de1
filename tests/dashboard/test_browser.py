"""End to end in headless Chromium (Playwright, sync API): log in, visit every page, submit a job, watch it run.

Needs Debian's chromium (``apt-get install -y chromium``) and the ``playwright`` package; never ``playwright
install``. Screenshots go to ``$PUMICE_SCREENSHOTS`` (default ``/tmp``) as ``pumice-dashboard-*.png``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from .live import TOKEN, Live

CHROMIUM = os.environ.get("PUMICE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
SHOTS = Path(os.environ.get("PUMICE_SCREENSHOTS", "/tmp"))

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None  # type: ignore[assignment]

pytestmark = [
    pytest.mark.skipif(sync_playwright is None,
                       reason="the playwright package is not installed (pip install playwright)"),
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason=f"chromium not installed at {CHROMIUM} (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any, live: Live) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    problems: list[str] = []
    tab.on("pageerror", lambda err: problems.append(f"page error: {err}"))

    def on_console(msg: Any) -> None:
        # the refused submissions of the tests answer 4xx, which Chromium logs; anything else is a problem
        if msg.type == "error" and not str(msg.location.get("url", "")).endswith("/dashboard/api/apply"):
            problems.append(f"console {msg.type}: {msg.text} ({msg.location})")

    tab.on("console", on_console)
    host = urlsplit(live.url).netloc

    def only_local(route: Any) -> None:
        if urlsplit(route.request.url).netloc != host:
            problems.append(f"external request: {route.request.url}")
            route.abort()
        else:
            route.continue_()

    tab.route("**/*", only_local)
    tab.goto(f"{live.url}/?token={TOKEN}")
    yield tab
    context.close()
    assert not problems, problems


def shot(tab: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"pumice-dashboard-{name}.png"), full_page=True)


def test_login_and_every_page(page: Any, live: Live) -> None:
    expect(page).to_have_url(re.compile(re.escape(live.url) + r"/(#/?)?$"))  # ?token= went away
    cookie = next(c for c in page.context.cookies() if c["name"] == "pumice-dashboard")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] != TOKEN

    # overview
    expect(page.locator("#card-total-jobs .value")).to_have_text(re.compile(r"^[1-9]\d*$"))
    expect(page.locator("#live")).to_have_class(re.compile(r"\bok\b"))
    expect(page.locator("#alert")).to_be_visible()
    shot(page, "overview")

    page.click("#nav a[data-page=queues]")
    research = page.locator('.tnode.queue[data-queue="research"]')
    expect(research).to_contain_text("cap")
    expect(research.locator('.meter[data-dim="gpu"] .v')).to_contain_text("/ 16")
    expect(page.locator('.tnode.queue[data-queue="root"]')).to_be_visible()
    shot(page, "queues")

    page.click("#nav a[data-page=pods]")
    expect(page.locator('tr[data-key="default/train-llm-0"] .phase')).to_have_text("Running", timeout=20_000)
    page.fill("#search", "too-big")
    expect(page.locator("tbody tr")).to_have_count(2)
    page.fill("#search", "")
    shot(page, "pods")

    page.click("#nav a[data-page=podgroups]")
    too_big = page.locator('tr[data-key="default/too-big"]')
    expect(too_big).to_contain_text("Insufficient nvidia.com/gpu", timeout=20_000)
    shot(page, "podgroups")

    page.click("#nav a[data-page=nodes]")
    expect(page.locator('tr[data-node="gpu-0"]')).to_contain_text("rack-0")
    expect(page.locator('tr[data-node="gpu-0"] .meter[data-dim="gpu"] .v')).to_have_text("4 / 8")
    shot(page, "nodes")

    page.click("#nav a[data-page=topology]")
    spine = page.locator('.hypernode[data-hypernode="spine-0"]')
    expect(spine).to_contain_text("tier 2")
    expect(page.locator('.hypernode[data-hypernode="rack-0"]')).to_contain_text("8 used")
    expect(page.locator('.hypernode[data-hypernode="rack-1"] .chip[data-node="gpu-3"]')).to_be_visible()
    expect(page.locator("#topology-error")).to_have_count(0)  # a tree the scheduler accepts
    shot(page, "topology")

    page.click("#nav a[data-page=jobs]")
    page.click('tr.job-row[data-key="default/too-big"]')
    expect(page.locator("#pending-reason")).to_contain_text("Insufficient nvidia.com/gpu")
    expect(page.locator("#job-phase")).to_have_text(re.compile("Pending|Inqueue"))
    shot(page, "job-pending")


def _manifest(controllers: bool) -> tuple[str, str]:
    if controllers:
        return "e2e-job", """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: e2e-job}
spec:
  minAvailable: 2
  queue: default
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata: {annotations: {pumice.io/duration: 60s}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox,
                      resources: {requests: {cpu: "2", nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}}]
"""
    pods = "\n".join(f"""---
apiVersion: v1
kind: Pod
metadata:
  name: e2e-gang-{i}
  annotations: {{scheduling.k8s.io/group-name: e2e-gang, pumice.io/duration: 60s}}
spec:
  schedulerName: volcano
  containers:
  - {{name: c, image: busybox,
     resources: {{requests: {{cpu: "2", nvidia.com/gpu: "2"}}, limits: {{nvidia.com/gpu: "2"}}}}}}""" for i in range(2))
    return "e2e-gang", "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: e2e-gang}\n" \
        "spec: {minMember: 2, queue: default}\n" + pods


def test_submit_a_job_and_watch_it_run(page: Any, live: Live) -> None:
    page.click("#nav a[data-page=jobs]")
    page.click("#submit-toggle")
    expect(page.locator("#yaml")).to_be_visible()
    message = page.locator("#apply-msg")

    page.fill("#yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c, "
                       "resources: {requests: {cpu: 2x}}}]}")
    page.click("#apply-btn")
    expect(message).to_have_class(re.compile(r"\berror\b"))
    expect(message).to_contain_text("invalid quantity")
    assert "\n" not in message.inner_text()
    page.fill("#yaml", "kind: [oops")
    page.click("#apply-btn")
    expect(message).to_contain_text("manifest")
    expect(message).to_have_class(re.compile(r"\berror\b"))

    name, manifest = _manifest(live.cluster is not None
                               and getattr(live.cluster, "controllers", None) is not None)
    page.fill("#yaml", manifest)
    page.click("#apply-btn")
    expect(message).to_have_class(re.compile(r"\bok\b"))
    expect(message).to_contain_text(name)
    row = page.locator(f'tr.job-row[data-key="default/{name}"]')
    expect(row).to_be_visible()  # appears without reloading: polling
    if live.cluster is None:
        shot(page, "jobs")
        pytest.skip("no runtime cluster: the job cannot run")
    expect(row.locator(".phase")).to_have_text("Running", timeout=30_000)
    shot(page, "jobs")
    row.click()
    expect(page.locator("#job-phase")).to_have_text(re.compile("Running|Completed"))
    expect(page.locator("#content")).to_contain_text(re.compile(r"gpu-\d"))  # its pods were placed on nodes
    expect(page.locator("#job-phase")).to_have_text("Completed", timeout=30_000)
    expect(page.locator("#content td .phase", has_text="Succeeded")).to_have_count(2)
    expect(page.locator("#pending-reason")).to_have_count(0)
    shot(page, "job-detail")
    page.click("#nav a[data-page=overview]")
    expect(page.locator("#card-complete-rate .sub")).to_contain_text(re.compile(r"[1-9]\d* completed"))


def test_the_token_leaves_no_trace_in_urls_or_referers(browser: Any, live: Live) -> None:
    context = browser.new_context()
    tab = context.new_page()
    sent: list[tuple[str, dict[str, str]]] = []
    tab.on("request", lambda request: sent.append((request.url, request.headers)))
    answered: list[dict[str, str]] = []
    tab.on("response", lambda response: answered.append(response.headers))
    try:
        tab.goto(f"{live.url}/?token={TOKEN}")
        expect(tab.locator("#card-total-jobs .value")).to_have_text(re.compile(r"^\d+$"))
        tab.click("#nav a[data-page=pods]")
        expect(tab.locator("tbody tr").first).to_be_visible()
        assert TOKEN not in tab.url
        assert TOKEN not in tab.evaluate("document.referrer + location.href + JSON.stringify(history.state)")
        after_login = [(url, headers) for url, headers in sent if TOKEN not in url]
        assert len(after_login) >= 3, sent  # the page, its assets, its API polls
        referers = [(url, headers.get("referer")) for url, headers in after_login]
        assert not any(referer for _, referer in referers), referers  # (Playwright shows a withheld one as "")
        assert all(headers.get("referrer-policy") == "no-referrer" for headers in answered), answered
    finally:
        context.close()


def test_a_jobflow_in_the_jobs_view(page: Any, live: Live) -> None:
    if live.cluster is None or getattr(live.cluster, "controllers", None) is None:
        pytest.skip("no runtime cluster with controllers: the flow cannot run")
    manifest = (Path(__file__).resolve().parents[2] / "examples" / "jobs" / "70-jobflow.yaml").read_text()
    page.click("#nav a[data-page=jobs]")
    page.click("#submit-toggle")
    page.fill("#yaml", manifest)
    page.click("#apply-btn")
    expect(page.locator("#apply-msg")).to_contain_text("pipeline")
    flow = page.locator('#jobflows tr.flow-row[data-key="default/pipeline"]')
    expect(flow).to_be_visible()
    expect(flow.locator('.flow-step[data-template="prepare"] a')).to_be_visible(timeout=30_000)
    expect(flow.locator(".phase")).to_have_text("Succeed", timeout=60_000)
    expect(flow.locator(".flow-step .badge", has_text="Completed")).to_have_count(3)
    shot(page, "jobflow")
    flow.locator('.flow-step[data-template="train"] a').click()
    expect(page.locator("#job-name")).to_have_text("default/pipeline-train")
    expect(page.locator("#job-flow")).to_have_text("pipeline")
