/* pumice dashboard: a dependency-free single-page app over /dashboard/api/*. Polls the current page's
   endpoint every POLL_MS (the server answers 304 while the store has not changed). */
"use strict";

const POLL_MS = 1500;
const API = "/dashboard/api";

// ---------------------------------------------------------------------------------------------- helpers

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

function phaseClass(phase) {
  switch (phase) {
    case "Running": return "run";
    case "Completed": case "Succeeded": case "Succeed": case "Open": case "Ready": return "ok";
    case "Pending": case "Inqueue": case "Restarting": case "Completing": case "Terminating": case "Aborting": case "Closing": return "warn";
    case "Failed": case "Aborted": case "Unknown": case "NotReady": case "Closed": case "Warning": return "bad";
    default: return "idle";
  }
}
const badge = (text, cls) => `<span class="badge ${cls || phaseClass(text)}">${esc(text)}</span>`;

function fmtNum(x) {
  if (x === null || x === undefined) return "-";
  if (Math.abs(x) >= 100) return String(Math.round(x));
  return String(Math.round(x * 100) / 100);
}
function fmtBytes(b) {
  if (!b) return "0";
  const units = [["Ti", 2 ** 40], ["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];
  for (const [u, m] of units) if (b >= m) return fmtNum(b / m) + u;
  return fmtNum(b);
}
const fmtRes = (dim, v) => (dim === "memory" ? fmtBytes(v) : fmtNum(v));
const DIM_LABEL = { cpu: "CPU", memory: "Memory", gpu: "GPU", pods: "Pods" };

function fmtTime(ts) {
  if (!ts) return "-";
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d:\d\d:\d\d)/.exec(ts);
  return m ? `<span title="${esc(ts)}">${m[2]}-${m[3]} ${m[4]}</span>` : esc(ts);
}

function meter(dim, used, limit, opts = {}) {
  const pct = limit > 0 ? Math.min(100, (used / limit) * 100) : used > 0 ? 100 : 0;
  const cls = pct >= 100 ? "full" : pct >= 85 ? "hot" : "";
  const mark = opts.mark && limit > 0 ? `<span class="mark" style="left:${Math.min(100, (opts.mark / limit) * 100)}%" title="deserved ${esc(fmtRes(dim, opts.mark))}"></span>` : "";
  const tail = opts.text ?? `${fmtRes(dim, used)} / ${limit > 0 ? fmtRes(dim, limit) : "0"}`;
  const label = opts.label === false ? "" : `<span class="k">${DIM_LABEL[dim] || dim}</span>`;
  return `<div class="meter${opts.label === false ? " nolabel" : ""}" data-dim="${dim}">${label}` +
    `<div class="bar ${cls}"><span style="width:${pct.toFixed(1)}%"></span>${mark}</div><span class="v">${tail}</span></div>`;
}

function table(columns, rows, opts = {}) {
  if (!rows.length) return `<div class="empty">${esc(opts.empty || "Nothing here yet.")}</div>`;
  const head = columns.map((c) => `<th class="${c.num ? "num" : ""}">${esc(c.title)}</th>`).join("");
  const body = rows.map((r) => {
    const attrs = opts.rowAttrs ? opts.rowAttrs(r) : "";
    return `<tr ${attrs}>` + columns.map((c) => `<td class="${c.cls || (c.num ? "num" : "")}">${c.render(r)}</td>`).join("") + "</tr>";
  }).join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function donut(counts) {
  const palette = { Running: "#2f6fed", Pending: "#f0a020", Inqueue: "#f6c343", Completed: "#1f9d55", Failed: "#d93838",
    Aborted: "#a33", Terminated: "#8a93a6", Unknown: "#b54ad9", Restarting: "#ff7a45", Completing: "#58c48a" };
  const extra = ["#0fb5ae", "#7b61ff", "#e0569b", "#5c6f8a"];
  const entries = Object.entries(counts).filter(([, n]) => n > 0);
  const total = entries.reduce((s, [, n]) => s + n, 0);
  const r = 52, c = 2 * Math.PI * r;
  let offset = 0, i = 0;
  const arcs = entries.map(([k, n]) => {
    const color = palette[k] || extra[i++ % extra.length];
    const len = (n / total) * c;
    const arc = `<circle r="${r}" cx="70" cy="70" fill="none" stroke="${color}" stroke-width="22" stroke-dasharray="${len} ${c - len}" stroke-dashoffset="${-offset}" transform="rotate(-90 70 70)"><title>${esc(k)}: ${n}</title></circle>`;
    offset += len;
    return { arc, k, n, color };
  });
  const svg = `<svg width="140" height="140" viewBox="0 0 140 140" role="img" aria-label="jobs by status">` +
    `<circle r="${r}" cx="70" cy="70" fill="none" stroke="#edf0f5" stroke-width="22"/>` + arcs.map((a) => a.arc).join("") +
    `<text x="70" y="67" text-anchor="middle" font-size="24" font-weight="700" fill="#1d2330">${total}</text>` +
    `<text x="70" y="86" text-anchor="middle" font-size="11" fill="#6b7385">jobs</text></svg>`;
  const legend = arcs.length ? arcs.map((a) => `<div><i style="background:${a.color}"></i>${esc(a.k)} <b>${a.n}</b></div>`).join("") : `<div class="muted">No jobs yet</div>`;
  return `<div class="chart">${svg}<div class="legend">${legend}</div></div>`;
}

// -------------------------------------------------------------------------------------------- templates

const VCJOB_TEMPLATE = `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: demo-job
  namespace: default
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: default
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata:
        annotations:
          pumice.io/duration: "2m"   # simulated nodes: how long each pod runs
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
          command: ["sh", "-c", "sleep 120"]
          resources:
            requests: {cpu: "1", memory: 1Gi}
`;

const PODGROUP_TEMPLATE = `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: demo-gang, namespace: default}
spec: {minMember: 2, queue: default}
---
apiVersion: v1
kind: Pod
metadata:
  name: demo-gang-0
  namespace: default
  annotations: {scheduling.k8s.io/group-name: demo-gang, pumice.io/duration: "2m"}
spec:
  schedulerName: volcano
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: demo-gang-1
  namespace: default
  annotations: {scheduling.k8s.io/group-name: demo-gang, pumice.io/duration: "2m"}
spec:
  schedulerName: volcano
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`;

// ------------------------------------------------------------------------------------------------ filters

const filters = { search: "", phase: "" };

function filterToolbar(placeholder) {
  return `<input id="search" type="search" placeholder="${esc(placeholder)}" value="${esc(filters.search)}">` +
    `<select id="phase-filter"><option value="">All statuses</option></select>`;
}
function bindFilters() {
  const s = $("#search"), p = $("#phase-filter");
  if (s) s.addEventListener("input", () => { filters.search = s.value.trim().toLowerCase(); rerender(); });
  if (p) p.addEventListener("change", () => { filters.phase = p.value; rerender(); });
}
function syncPhaseOptions(rows, field = "phase") {
  const sel = $("#phase-filter");
  if (!sel) return;
  const phases = [...new Set(rows.map((r) => r[field]))].sort();
  const want = ["", ...phases].join("|");
  if (sel.dataset.options !== want) {
    sel.innerHTML = `<option value="">All statuses</option>` + phases.map((p) => `<option>${esc(p)}</option>`).join("");
    sel.dataset.options = want;
  }
  sel.value = phases.includes(filters.phase) ? filters.phase : "";
}
function applyFilters(rows, fields, phaseField = "phase") {
  return rows.filter((r) => (!filters.phase || r[phaseField] === filters.phase) &&
    (!filters.search || fields.some((f) => String(r[f] ?? "").toLowerCase().includes(filters.search))));
}

// -------------------------------------------------------------------------------------------------- pages

const jobKey = (r) => `${r.namespace}/${r.name}`;
const jobHref = (r) => `#/jobs/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}?kind=${encodeURIComponent(r.kind)}`;

const JOB_COLUMNS = [
  { title: "Name", render: (r) => `<a href="${jobHref(r)}">${esc(r.name)}</a>` },
  { title: "Namespace", render: (r) => esc(r.namespace) },
  { title: "Queue", render: (r) => esc(r.queue) },
  { title: "Kind", render: (r) => `<span class="muted">${r.kind === "Job" ? "VolcanoJob" : "PodGroup"}</span>` },
  { title: "Status", render: (r) => `<span class="phase">${badge(r.phase)}</span>` },
  { title: "Running", num: true, render: (r) => `${r.running}/${r.replicas}` },
  { title: "Succeeded", num: true, render: (r) => r.succeeded },
  { title: "Failed", num: true, render: (r) => r.failed },
  { title: "Min", num: true, render: (r) => esc(r.minAvailable ?? "-") },
  { title: "Created", render: (r) => `<span class="muted">${fmtTime(r.created)}</span>` },
  { title: "Pending reason", cls: "msg", render: (r) => esc(r.pendingReason || "") },
];
// A JobFlow's flows in order: each its template, the Job made of it (a link) and the Job's phase.
const flowStep = (f, s) => {
  const label = s.job ? `<a href="#/jobs/${encodeURIComponent(f.namespace)}/${encodeURIComponent(s.job)}?kind=Job">${esc(s.template)}</a>` : esc(s.template);
  const after = s.dependsOn.length ? ` <span class="muted small">after ${s.dependsOn.map(esc).join(", ")}</span>` : "";
  return `<span class="flow-step" data-template="${esc(s.template)}">${label} ${badge(s.phase)}${after}</span>`;
};
const FLOW_COLUMNS = [
  { title: "JobFlow", render: (f) => esc(f.name) },
  { title: "Namespace", render: (f) => esc(f.namespace) },
  { title: "Status", render: (f) => `<span class="phase">${badge(f.phase)}</span>` },
  { title: "Flows", cls: "msg", render: (f) => f.steps.map((s) => flowStep(f, s)).join(" · ") },
  { title: "Jobs kept", render: (f) => `<span class="muted">${f.retainPolicy === "delete" ? "deleted on success" : "retained"}</span>` },
  { title: "Created", render: (f) => `<span class="muted">${fmtTime(f.created)}</span>` },
];
const jobRowAttrs = (r) => `class="clickable job-row" data-key="${esc(jobKey(r))}" data-href="${esc(jobHref(r))}"`;

const pages = {
  overview: {
    title: "Dashboard",
    api: () => "/overview",
    render(d) {
      const alertCls = { "Jobs Running": "info", "All Jobs Complete": "ok", "No Jobs Found": "warn", "Jobs Pending": "warn" }[d.alert] || "info";
      const rate = d.completionRate === null ? "-" : `${Math.round(d.completionRate * 1000) / 10}%`;
      const cl = d.cluster;
      const queueRows = d.queues.map((q) => `<tr><td style="padding-left:${0.6 + q.depth * 1.2}rem">${esc(q.name)}</td><td>${badge(q.state)}</td>` +
        ["cpu", "memory", "gpu"].map((k) => `<td class="bars-cell">${meter(k, q.allocated[k], q.limit[k], { label: false, mark: q.limitSource[k] === "capability" && q.deserved ? q.deserved[k] : 0 })}</td>`).join("") + "</tr>").join("");
      return `<div id="alert" class="banner ${alertCls}">${esc(d.alert)}</div>
        <div class="grid cards">
          <div class="card" id="card-total-jobs"><div class="label">Total jobs</div><div class="value">${d.jobs.total}</div><div class="sub">${d.jobs.finished} finished</div></div>
          <div class="card" id="card-active-jobs"><div class="label">Active jobs</div><div class="value">${d.jobs.active}</div><div class="sub">Running, pending or in queue</div></div>
          <div class="card" id="card-running-pods"><div class="label">Running pods</div><div class="value">${d.pods.running}</div><div class="sub">of ${d.pods.total} pods</div></div>
          <div class="card" id="card-complete-rate"><div class="label">Complete rate</div><div class="value">${rate}</div><div class="sub">${d.jobs.completed} completed</div></div>
          <div class="card"><div class="label">Nodes</div><div class="value">${d.nodes.ready}<span class="muted" style="font-size:16px"> / ${d.nodes.total}</span></div><div class="sub">ready · ${d.hyperNodes} HyperNodes</div></div>
        </div>
        <div class="grid two">
          <div class="panel"><h2>Jobs by status</h2>${donut(d.jobs.byPhase)}</div>
          <div class="panel"><h2>Cluster resources <span class="muted">allocated / allocatable</span></h2>
            ${["cpu", "memory", "gpu", "pods"].map((k) => meter(k, cl.used[k], cl.allocatable[k])).join("")}
            <p class="muted small">Pods: ${Object.entries(d.pods.byPhase).map(([k, n]) => `${esc(k)} ${n}`).join(" · ") || "none"}</p></div>
        </div>
        <div class="panel"><h2>Queue resources <span class="muted">allocated vs capability (or deserved, or the cluster)</span></h2>
          ${d.queues.length ? `<table><thead><tr><th>Queue</th><th>State</th><th>CPU</th><th>Memory</th><th>GPU</th></tr></thead><tbody>${queueRows}</tbody></table>` : `<div class="empty">No queues</div>`}</div>
        <div class="panel"><h2>Recent jobs</h2>${table(JOB_COLUMNS.slice(0, 7), d.recentJobs, { rowAttrs: jobRowAttrs, empty: "No jobs yet: submit one on the Jobs page." })}</div>`;
    },
  },

  jobs: {
    title: "Jobs",
    api: () => "/jobs",
    toolbar: () => filterToolbar("Search name, namespace, queue") + `<button id="submit-toggle" class="primary">Submit YAML</button>`,
    extra: () => `<div id="submit-panel" class="submit" hidden>
        <div class="row" style="margin:0 0 .6rem"><b>Submit a manifest</b><span class="muted small">YAML or JSON, one or more objects</span>
          <span style="flex:1"></span><button id="tpl-vcjob" type="button">VolcanoJob example</button><button id="tpl-pg" type="button">Pod + PodGroup example</button></div>
        <textarea id="yaml" spellcheck="false"></textarea>
        <div class="row"><button id="apply-btn" class="primary" type="button">Create</button><span id="apply-msg" class="apply-msg" role="status"></span></div>
      </div>`,
    bind() {
      bindFilters();
      const panel = $("#submit-panel"), area = $("#yaml");
      area.value = submitDraft ?? VCJOB_TEMPLATE;
      area.addEventListener("input", () => { submitDraft = area.value; });
      $("#submit-toggle").addEventListener("click", () => { panel.hidden = !panel.hidden; if (!panel.hidden) area.focus(); });
      $("#tpl-vcjob").addEventListener("click", () => { area.value = submitDraft = VCJOB_TEMPLATE; });
      $("#tpl-pg").addEventListener("click", () => { area.value = submitDraft = PODGROUP_TEMPLATE; });
      $("#apply-btn").addEventListener("click", submitYaml);
    },
    render(d) {
      syncPhaseOptions(d.items);
      const rows = applyFilters(d.items, ["name", "namespace", "queue"]);
      const flows = applyFilters(d.flows || [], ["name", "namespace"]);
      return `<div class="panel">${table(JOB_COLUMNS, rows, { rowAttrs: jobRowAttrs, empty: "No jobs. Use “Submit YAML” to create one." })}</div>` +
        (flows.length ? `<div class="panel" id="jobflows"><h2>Job flows</h2>${table(FLOW_COLUMNS, flows, { rowAttrs: (f) => `class="flow-row" data-key="${esc(jobKey(f))}"` })}</div>` : "");
    },
  },

  job: {
    title: "Job",
    api: (p) => `/jobs/${encodeURIComponent(p.namespace)}/${encodeURIComponent(p.name)}?kind=${encodeURIComponent(p.kind || "Job")}`,
    render(d) {
      const j = d.job;
      const tasks = table([
        { title: "Task", render: (t) => esc(t.name) },
        { title: "Replicas", num: true, render: (t) => esc(t.replicas) },
        { title: "Min available", num: true, render: (t) => esc(t.minAvailable ?? "-") },
        { title: "Pods by phase", render: (t) => Object.entries(t.phases).map(([k, n]) => `${badge(k)} ${n}`).join(" ") || `<span class="muted">no pods</span>` },
      ], d.tasks, { empty: "No tasks" });
      const pods = table(POD_COLUMNS.filter((c) => !["Namespace", "PodGroup"].includes(c.title)), d.pods, { empty: "No pods yet (a VolcanoJob's pods are created once its PodGroup is admitted)." });
      const conds = (list) => table([
        { title: "Type", render: (c) => esc(c.type) }, { title: "Status", render: (c) => esc(c.status) },
        { title: "Reason", render: (c) => esc(c.reason || "") }, { title: "Message", cls: "msg", render: (c) => esc(c.message || "") },
        { title: "Since", render: (c) => `<span class="muted">${fmtTime(c.lastTransitionTime)}</span>` },
      ], list, { empty: "No conditions" });
      const events = table([
        { title: "Type", render: (e) => badge(e.type, e.type === "Warning" ? "warn" : "idle") },
        { title: "Reason", render: (e) => esc(e.reason) }, { title: "Object", render: (e) => esc(e.object) },
        { title: "Message", cls: "msg", render: (e) => esc(e.message) }, { title: "Count", num: true, render: (e) => esc(e.count) },
        { title: "Last seen", render: (e) => `<span class="muted">${fmtTime(e.time)}</span>` },
      ], d.events, { empty: "No events" });
      const pg = d.podGroup;
      return `<a class="back" href="#/jobs">← All jobs</a>
        <div class="panel"><h2><span id="job-name">${esc(j.namespace)}/${esc(j.name)}</span> <span id="job-phase" class="phase">${badge(j.phase)}</span>
          <span class="muted">${j.kind === "Job" ? "VolcanoJob" : "PodGroup"}</span></h2>
          ${d.pendingReason ? `<div id="pending-reason" class="banner warn"><b>Pending:</b> ${esc(d.pendingReason)}</div>` : ""}
          <dl class="kv"><dt>Queue</dt><dd>${esc(j.queue)}</dd><dt>Min available</dt><dd>${esc(j.minAvailable ?? "-")}</dd>
          <dt>Pods</dt><dd>${j.pending} pending · ${j.running} running · ${j.succeeded} succeeded · ${j.failed} failed</dd>
          ${j.flow ? `<dt>JobFlow</dt><dd id="job-flow">${esc(j.flow)}</dd>` : ""}
          <dt>Retries</dt><dd>${esc(j.retryCount)}</dd><dt>PodGroup</dt><dd>${pg ? `${esc(pg.name)} ${badge(pg.phase)} (minMember ${esc(pg.minMember)})` : "-"}</dd>
          <dt>Created</dt><dd>${fmtTime(j.created)}</dd></dl></div>
        <div class="panel"><h2>Tasks</h2>${tasks}</div>
        <div class="panel"><h2>Pods</h2>${pods}</div>
        ${pg ? `<div class="panel"><h2>PodGroup conditions</h2>${conds(pg.conditions)}</div>` : ""}
        ${d.conditions.length ? `<div class="panel"><h2>Phase history</h2>${table([
          { title: "Phase", render: (c) => badge(c.status || c.type) },
          { title: "Since", render: (c) => `<span class="muted">${fmtTime(c.lastTransitionTime)}</span>` },
        ], d.conditions)}</div>` : ""}
        <div class="panel"><h2>Events</h2>${events}</div>
        <div class="panel"><details id="yaml-details"><summary><b>YAML</b></summary><pre class="yaml">${esc(d.yaml)}</pre></details></div>`;
    },
  },

  queues: {
    title: "Queues",
    api: () => "/queues",
    render(d) {
      if (!d.items.length) return `<div class="panel"><div class="empty">No queues</div></div>`;
      const node = (q) => {
        const dims = ["cpu", "memory", "gpu"].map((k) => {
          const used = q.allocated[k], limit = q.limit[k];
          const des = q.deserved ? q.deserved[k] : 0;
          const text = `${fmtRes(k, used)} / ${fmtRes(k, limit)}${q.limitSource[k] === "cluster" ? " (cluster)" : q.limitSource[k] === "deserved" ? " deserved" : " cap"}` +
            (des && q.limitSource[k] === "capability" ? ` · deserved ${fmtRes(k, des)}` : "");
          return meter(k, used, limit, { mark: q.limitSource[k] === "capability" ? des : 0, text });
        }).join("");
        const pgs = Object.entries(q.podGroups).map(([k, n]) => `${badge(k)} ${n}`).join(" ");
        return `<li><div class="tnode queue" data-queue="${esc(q.name)}"><div class="head"><b>${esc(q.name)}</b>${badge(q.state)}
          <span class="muted small">weight ${esc(q.weight)} · priority ${esc(q.priority)}${q.reclaimable === false ? " · not reclaimable" : ""} · ${q.leaf ? "leaf" : "parent"} · ${q.jobs} VolcanoJobs</span>
          <span class="small">${pgs}</span></div><div class="cols">${dims}</div></div>
          ${q.children.length ? `<ul class="tree">${q.children.map(node).join("")}</ul>` : ""}</li>`;
      };
      return `<div class="panel"><h2>Queue tree <span class="muted">allocated vs capability; the tick marks deserved</span></h2><ul class="tree">${d.items.map(node).join("")}</ul></div>`;
    },
  },

  pods: {
    title: "Pods",
    api: () => "/pods",
    toolbar: () => filterToolbar("Search name, namespace, node"),
    bind: bindFilters,
    render(d) {
      syncPhaseOptions(d.items);
      const rows = applyFilters(d.items, ["name", "namespace", "node", "podGroup"]);
      return `<div class="panel">${table(POD_COLUMNS, rows, { empty: "No pods", rowAttrs: (r) => `data-key="${esc(r.namespace + "/" + r.name)}"` })}</div>`;
    },
  },

  podgroups: {
    title: "PodGroups",
    api: () => "/podgroups",
    toolbar: () => filterToolbar("Search name, namespace, queue"),
    bind: bindFilters,
    render(d) {
      syncPhaseOptions(d.items);
      const rows = applyFilters(d.items, ["name", "namespace", "queue", "owner"]);
      return `<div class="panel">${table([
        { title: "Name", render: (r) => `<a href="#/jobs/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.owner || r.name)}?kind=${r.owner ? "Job" : "PodGroup"}">${esc(r.name)}</a>` },
        { title: "Namespace", render: (r) => esc(r.namespace) },
        { title: "Queue", render: (r) => esc(r.queue) },
        { title: "Min", num: true, render: (r) => esc(r.minMember) },
        { title: "Status", render: (r) => badge(r.phase) },
        { title: "Running", num: true, render: (r) => esc(r.running) },
        { title: "Succeeded", num: true, render: (r) => esc(r.succeeded) },
        { title: "Failed", num: true, render: (r) => esc(r.failed) },
        { title: "Owner", render: (r) => esc(r.owner || "-") },
        { title: "Created", render: (r) => `<span class="muted">${fmtTime(r.created)}</span>` },
        { title: "Unschedulable", cls: "msg", render: (r) => esc(r.pendingReason || "") },
      ], rows, { empty: "No PodGroups", rowAttrs: (r) => `data-key="${esc(r.namespace + "/" + r.name)}"` })}</div>`;
    },
  },

  nodes: {
    title: "Nodes",
    api: () => "/nodes",
    render(d) {
      const t = d.totals;
      const status = (n) => (!n.ready ? badge("NotReady") : n.unschedulable ? badge("Cordoned", "warn") : badge("Ready"));
      return `<div class="panel"><h2>Cluster <span class="muted">allocated / allocatable</span></h2><div class="cols" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:0 1.5rem">
          ${["cpu", "memory", "gpu", "pods"].map((k) => meter(k, t.used[k], t.allocatable[k])).join("")}</div></div>
        <div class="panel">${table([
          { title: "Name", render: (n) => `<b>${esc(n.name)}</b>` },
          { title: "Status", render: status },
          { title: "HyperNode", render: (n) => esc(n.hyperNode || "-") },
          { title: "Pods", num: true, render: (n) => esc(n.podCount) },
          { title: "CPU", cls: "bars-cell", render: (n) => meter("cpu", n.used.cpu, n.allocatable.cpu, { label: false }) },
          { title: "Memory", cls: "bars-cell", render: (n) => meter("memory", n.used.memory, n.allocatable.memory, { label: false }) },
          { title: "GPU", cls: "bars-cell", render: (n) => (n.allocatable.gpu || n.used.gpu ? meter("gpu", n.used.gpu, n.allocatable.gpu, { label: false }) : `<span class="muted">-</span>`) },
          { title: "Taints", cls: "msg", render: (n) => esc(n.taints.join(", ")) },
        ], d.items, { empty: "No nodes", rowAttrs: (n) => `data-node="${esc(n.name)}"` })}</div>`;
    },
  },

  topology: {
    title: "Topology",
    api: () => "/topology",
    render(d) {
      const gpus = (n) => {
        const total = Math.round(n.allocatable?.gpu || 0), used = Math.min(total, Math.round(n.used?.gpu || 0));
        if (!total || total > 32) return total ? ` <span class="muted">${used}/${total} GPU</span>` : "";
        return `<span class="gpus" title="${used}/${total} GPUs used">${"<i class=\"used\"></i>".repeat(used)}${"<i></i>".repeat(total - used)}</span>`;
      };
      const chip = (n) => (n.missing ? `<span class="chip bad" title="no such node">${esc(n.name)}?</span>` :
        `<span class="chip ${n.ready ? "" : "bad"}" data-node="${esc(n.name)}">${esc(n.name)}${gpus(n)}</span>`);
      const node = (h) => `<li><div class="tnode hypernode" data-hypernode="${esc(h.name)}"><div class="head"><b>${esc(h.name)}</b>
          ${badge(`tier ${h.tier}${h.tierName ? " · " + h.tierName : ""}`, "run")}<span class="muted small">${h.nodeCount} nodes · ${fmtNum(h.free.gpu)} GPUs free of ${fmtNum(h.allocatable.gpu)}</span></div>
          <div class="cols">${meter("gpu", h.used.gpu, h.allocatable.gpu, { text: `${fmtNum(h.used.gpu)} used · ${fmtNum(h.free.gpu)} free` })}${meter("cpu", h.used.cpu, h.allocatable.cpu)}</div>
          ${h.nodes.length ? `<div class="chips">${h.nodes.map(chip).join("")}</div>` : ""}</div>
          ${h.children.length ? `<ul class="tree">${h.children.map(node).join("")}</ul>` : ""}</li>`;
      const c = d.cluster;
      return `${d.error ? `<div id="topology-error" class="banner warn"><b>The scheduler refuses this tree</b> (no topology-aware job is placed): ${esc(d.error)}</div>` : ""}
        <div class="panel"><h2>Cluster <span class="muted">${d.tiers.length ? "tiers " + d.tiers.join(", ") : "no HyperNodes"}</span></h2>
          <div class="cols" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:0 1.5rem">
          ${meter("gpu", c.used.gpu, c.allocatable.gpu, { text: `${fmtNum(c.used.gpu)} used · ${fmtNum(c.free.gpu)} free` })}${meter("cpu", c.used.cpu, c.allocatable.cpu)}</div></div>
        <div class="panel"><h2>HyperNodes</h2>${d.items.length ? `<ul class="tree">${d.items.map(node).join("")}</ul>` : `<div class="empty">No HyperNodes: the whole cluster is one network domain.</div>`}</div>
        ${d.unassigned.length ? `<div class="panel"><h2>Nodes in no HyperNode</h2><div class="chips">${d.unassigned.map(chip).join("")}</div></div>` : ""}`;
    },
  },
};

const POD_COLUMNS = [
  { title: "Name", render: (r) => esc(r.name) },
  { title: "Namespace", render: (r) => esc(r.namespace) },
  { title: "Status", render: (r) => `<span class="phase">${badge(r.phase)}</span>` },
  { title: "Node", render: (r) => esc(r.node || "-") },
  { title: "PodGroup", render: (r) => esc(r.podGroup || "-") },
  { title: "Task", render: (r) => esc(r.task || "-") },
  { title: "CPU", num: true, render: (r) => fmtNum(r.requests.cpu) },
  { title: "Memory", num: true, render: (r) => fmtBytes(r.requests.memory) },
  { title: "GPU", num: true, render: (r) => fmtNum(r.requests.gpu) },
  { title: "Created", render: (r) => `<span class="muted">${fmtTime(r.created)}</span>` },
  { title: "Message", cls: "msg", render: (r) => esc(r.message || "") },
];

// ------------------------------------------------------------------------------------------------- submit

let submitDraft = null;

async function submitYaml() {
  const msg = $("#apply-msg"), btn = $("#apply-btn");
  msg.className = "apply-msg"; msg.textContent = "Creating…"; btn.disabled = true;
  try {
    const res = await fetch(`${API}/apply`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ yaml: $("#yaml").value }) });
    let body = {};
    try { body = await res.json(); } catch { /* not JSON */ }
    if (res.ok) {
      msg.className = "apply-msg ok";
      msg.textContent = "Created " + (body.created || []).map((o) => `${o.kind} ${o.namespace ? o.namespace + "/" : ""}${o.name}`).join(", ");
      refresh(true);
    } else {
      const done = (body.created || []).length ? ` (created before the error: ${body.created.map((o) => o.kind + " " + o.name).join(", ")})` : "";
      msg.className = "apply-msg error";
      msg.textContent = (body.error || body.message || `HTTP ${res.status}`) + done;
    }
  } catch (err) {
    msg.className = "apply-msg error"; msg.textContent = String(err);
  } finally {
    btn.disabled = false;
  }
}

// ------------------------------------------------------------------------------------------------- router

let current = null;  // {page, params, url, text, data}

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query || ""));
  if (!parts.length) return { page: "overview", params };
  if (parts[0] === "jobs" && parts.length >= 3) return { page: "job", params: { ...params, namespace: parts[1], name: parts[2] } };
  return { page: pages[parts[0]] ? parts[0] : "overview", params };
}

function navigate() {
  const { page, params } = parseHash();
  const def = pages[page];
  if (current && current.page !== page) { filters.search = ""; filters.phase = ""; }
  current = { page, params, url: API + def.api(params), text: null, data: null };
  document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === (page === "job" ? "jobs" : page)));
  $("#title").textContent = page === "job" ? `Job ${params.name}` : def.title;
  document.title = `${$("#title").textContent} · pumice`;
  $("#toolbar").innerHTML = def.toolbar ? def.toolbar() : "";
  $("#extra").innerHTML = def.extra ? def.extra() : "";
  $("#content").innerHTML = `<p class="muted">Loading…</p>`;
  if (def.bind) def.bind();
  refresh(true);
}

function rerender() {
  if (!current || !current.data) return;
  const content = $("#content");
  const open = [...content.querySelectorAll("details[open]")].map((d) => d.id);
  content.innerHTML = pages[current.page].render(current.data, current.params);
  open.forEach((id) => { const el = document.getElementById(id); if (el) el.open = true; });
}

let inflight = false;
async function refresh(force = false) {
  if (!current || (inflight && !force)) return;
  inflight = true;
  const want = current;
  const live = $("#live"), liveText = $("#live-text"), errorBox = $("#error");
  try {
    const res = await fetch(want.url, { headers: { Accept: "application/json" } });
    if (want !== current) return;
    if (res.status === 401) throw new Error("Not signed in: open /?token=<token> once to get a session.");
    const text = await res.text();
    if (res.status === 404 && want.page === "job") {
      $("#content").innerHTML = `<a class="back" href="#/jobs">← All jobs</a><div class="panel"><div class="empty">This job does not exist (any more).</div></div>`;
    } else if (!res.ok) {
      let message = `HTTP ${res.status}`;
      try { message = JSON.parse(text).message || message; } catch { /* keep */ }
      throw new Error(message);
    } else if (text !== want.text) {
      want.text = text;
      want.data = JSON.parse(text);
      $("#rv").textContent = want.data.resourceVersion ?? "-";
      rerender();
    }
    errorBox.hidden = true;
    live.className = "live ok"; liveText.textContent = "live";
  } catch (err) {
    live.className = "live bad"; liveText.textContent = "offline";
    errorBox.textContent = err.message || String(err); errorBox.hidden = false;
  } finally {
    inflight = false;
  }
}

document.addEventListener("click", (ev) => {
  const row = ev.target.closest("tr[data-href]");
  if (row && !ev.target.closest("a")) location.hash = row.dataset.href;
});
window.addEventListener("hashchange", navigate);
navigate();
setInterval(() => { if (!document.hidden) refresh(); }, POLL_MS);
