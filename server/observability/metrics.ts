// Prometheus text exposition (format 0.0.4) for the few series svc keeps; one registry per running server.
import type { CallEvent } from "../services.ts";
import { VERSION } from "../version.ts";

type Labels = Record<string, string>;

const SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const labelText = (l: Labels) => {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
};
// Each series always has the same label names, in the same order: their values identify it (on every call).
const keyOf = (l: Labels) => Object.values(l).join("\u0000");

class Counter {
  private values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const k = keyOf(labels);
    const cur = this.values.get(k);
    if (cur) cur.value += by;
    else this.values.set(k, { labels, value: by });
  }
  entries(): { labels: Labels; value: number }[] {
    return [...this.values.values()];
  }
  add(entries: { labels: Labels; value: number }[]): void {
    for (const e of entries) this.inc(e.labels, e.value);
  }
  render(): string[] {
    return [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} counter`,
      ...[...this.values.values()].map((v) => `${this.name}${labelText(v.labels)} ${v.value}`),
    ];
  }
}

interface HistogramSeries {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

class Histogram {
  private series = new Map<string, HistogramSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets = SECONDS_BUCKETS,
  ) {}
  observe(value: number, labels: Labels = {}): void {
    const k = keyOf(labels);
    let s = this.series.get(k);
    if (!s) {
      s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    this.buckets.forEach((b, i) => {
      if (value <= b) s.counts[i]!++;
    });
    s.sum += value;
    s.count++;
  }
  entries(): HistogramSeries[] {
    return [...this.series.values()];
  }
  add(entries: HistogramSeries[]): void {
    for (const e of entries) {
      const s = this.series.get(keyOf(e.labels));
      if (!s) this.series.set(keyOf(e.labels), { ...e, counts: [...e.counts] });
      else {
        e.counts.forEach((n, i) => (s.counts[i]! += n));
        s.sum += e.sum;
        s.count += e.count;
      }
    }
  }
  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: String(b) })} ${s.counts[i]}`));
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${s.count}`);
      lines.push(`${this.name}_sum${labelText(s.labels)} ${s.sum}`);
      lines.push(`${this.name}_count${labelText(s.labels)} ${s.count}`);
    }
    return lines;
  }
}

const gauge = (name: string, help: string, samples: [Labels, number][]) => [
  `# HELP ${name} ${help}`,
  `# TYPE ${name} gauge`,
  ...samples.map(([l, v]) => `${name}${labelText(l)} ${v}`),
];

/** Values read from the database at scrape time. */
export interface Snapshot {
  inboxUnread: number;
  inboxRequiresAction: number;
  dbPingSeconds: number;
}

/** The counters and histograms of one process, as plain data: the processes of svc serve --workers add theirs up. */
export type MetricsState = Record<string, { labels: Labels; value: number }[] | HistogramSeries[]>;

export class Metrics {
  readonly calls = new Counter("svc_tool_calls_total", "Tool calls by tool and result code (OK or the error code).");
  readonly latency = new Histogram("svc_tool_call_duration_seconds", "Time from receiving a tool call to its answer.");
  readonly rateLimited = new Counter("svc_rate_limited_total", "Tool calls refused by the rate limiter, by tool.");
  readonly dbTx = new Histogram("svc_db_transaction_seconds", "Duration of database transactions (one per tool call or job run), by kind: read or write.");
  readonly jobRuns = new Counter("svc_job_runs_total", "Background job runs by job and result (ok or error).");
  readonly jobRows = new Counter("svc_job_rows_total", "Rows removed or added by background jobs, by job.");
  readonly storageFaults = new Counter("svc_storage_faults_total", "Storage faults met (disk full, I/O error, read-only database), by SQLite code.");
  readonly replicaCatchUps = new Counter(
    "svc_replica_catch_ups_total",
    "An embedded replica's syncs before the first read after a write, by result: synced, behind (reads went to the primary), stale (the primary did not answer).",
  );
  readonly federationSendFailures = new Counter(
    "svc_federation_send_failures_total",
    "Transactions to another svc server it did not take, by peer (its host) and outcome: 401, 429, 4xx, 5xx, other (any other status), timeout, network (no connection).",
  );

  /** The observe hook of Services: one event per finished tool call. */
  recordCall(e: CallEvent): void {
    this.calls.inc({ tool: e.tool, code: e.code });
    this.latency.observe(e.ms / 1000, { tool: e.tool });
    if (e.code === "RATE_LIMITED") this.rateLimited.inc({ tool: e.tool });
  }

  // The series counted in this process, in the order /metrics shows them.
  private kept(): Record<string, Counter | Histogram> {
    const { calls, latency, rateLimited, dbTx, jobRuns, jobRows, storageFaults, replicaCatchUps, federationSendFailures } = this;
    return { calls, latency, rateLimited, dbTx, jobRuns, jobRows, storageFaults, replicaCatchUps, federationSendFailures };
  }

  state(): MetricsState {
    return Object.fromEntries(Object.entries(this.kept()).map(([name, m]) => [name, m.entries()]));
  }

  /** Adds another process's counts to these. */
  add(state: MetricsState): void {
    for (const [name, m] of Object.entries(this.kept())) {
      const entries = state[name];
      if (entries) (m.add as (e: typeof entries) => void)(entries);
    }
  }

  render(snap: Snapshot): string {
    return (
      [
        ...Object.values(this.kept()).flatMap((m) => m.render()),
        ...gauge("svc_inbox_items", "Inbox items stored and not dismissed, by state.", [
          [{ state: "unread" }, snap.inboxUnread],
          [{ state: "requires_action" }, snap.inboxRequiresAction],
        ]),
        ...gauge("svc_db_ping_seconds", "Time a trivial query took at this scrape.", [[{}, snap.dbPingSeconds]]),
        ...gauge("svc_build_info", "The release that answers, always 1.", [[{ version: VERSION }, 1]]),
        ...processGauges(),
      ].join("\n") + "\n"
    );
  }
}

const STARTED_S = Date.now() / 1000 - process.uptime();

// The process that answered the scrape (with svc serve --workers, one of them), under the names Prometheus' own
// client libraries use, so the usual dashboards and alerts apply.
function processGauges(): string[] {
  const cpu = process.cpuUsage();
  return [
    "# HELP process_cpu_seconds_total User and system CPU time of the process that answered, in seconds.",
    "# TYPE process_cpu_seconds_total counter",
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}`,
    ...gauge("process_resident_memory_bytes", "Resident memory of the process that answered.", [[{}, process.memoryUsage.rss()]]),
    ...gauge("process_start_time_seconds", "When the process that answered started, in seconds since the epoch.", [[{}, Math.round(STARTED_S)]]),
  ];
}
