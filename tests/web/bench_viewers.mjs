// How chessrl-web's memory and answers hold up as viewers are added: for each
// stage, N viewers each load the page and its files once, then ask for
// api/state every poll interval, as the page does, for --seconds. Reads the
// server's resident memory (/proc/PID/status) every 100 ms. Prints a Markdown
// table: viewers, requests/s served, median and 99th-percentile latency,
// errors, the snapshot's size, the most resident memory during the stage.
//
//   node bench_viewers.mjs --url http://127.0.0.1:PORT/ --pid PID
//        [--viewers 0,1,10,50,200] [--seconds 20] [--interval 1]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values: o } = parseArgs({
  options: {
    url: { type: "string" },
    pid: { type: "string" },
    viewers: { type: "string", default: "0,1,10,50,200" },
    seconds: { type: "string", default: "20" },
    interval: { type: "string", default: "1" },
  },
});
if (!o.url || !o.pid) {
  console.error("bench_viewers: --url and --pid are required");
  process.exit(2);
}
const rssKiB = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${o.pid}/status`, "utf8"));
  return m ? Number(m[1]) : NaN;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const files = ["", "static/app.js", "static/style.css", "vendor/chess.js/chess.js",
               "vendor/uplot/uPlot.esm.js", "vendor/cm-chessboard/src/Chessboard.js",
               "vendor/cm-chessboard/assets/pieces/standard.svg"];

async function viewer(stats, until) {
  for (const f of files) {
    try { await (await fetch(o.url + f)).arrayBuffer(); } catch { stats.errors++; }
  }
  // Spread the viewers over the interval, as real ones are.
  await sleep(Math.random() * Number(o.interval) * 1000);
  while (Date.now() < until) {
    const t0 = performance.now();
    try {
      const r = await fetch(o.url + "api/state", { cache: "no-store" });
      const body = await r.text();
      if (!r.ok) stats.errors++;
      stats.bytes = body.length;
      stats.latencies.push(performance.now() - t0);
    } catch {
      stats.errors++;
    }
    await sleep(Math.max(0, Number(o.interval) * 1000 - (performance.now() - t0)));
  }
}

const q = (xs, p) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(p * xs.length))].toFixed(1) : "–");
console.log("| viewers | api/state answers/s | median ms | p99 ms | errors | snapshot KiB | max RSS MiB |");
console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const n of o.viewers.split(",").map(Number)) {
  const stats = { latencies: [], errors: 0, bytes: 0 };
  const seconds = Number(o.seconds);
  const until = Date.now() + seconds * 1000;
  let maxRss = rssKiB();
  const sampler = setInterval(() => { maxRss = Math.max(maxRss, rssKiB()); }, 100);
  await Promise.all([...Array(n)].map(() => viewer(stats, until)), sleep(seconds * 1000));
  clearInterval(sampler);
  stats.latencies.sort((a, b) => a - b);
  console.log(`| ${n} | ${(stats.latencies.length / seconds).toFixed(1)} | ` +
              `${q(stats.latencies, 0.5)} | ${q(stats.latencies, 0.99)} | ` +
              `${stats.errors} | ${n ? (stats.bytes / 1024).toFixed(1) : "–"} | ${(maxRss / 1024).toFixed(1)} |`);
}
