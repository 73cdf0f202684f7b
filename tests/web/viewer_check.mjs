// The game viewer in a real browser: Debian's chromium, headless, driven by
// puppeteer-core. Loads the page of a running chessrl-web and checks that it
// renders with data: a live board with its pieces, its move list and model
// version; the evaluator's games with a move list; the match table; the Elo
// curve with points. Then follows the live games at their source (the self-play
// process's GET /live) for --follow seconds and measures how long each new move
// takes to appear on the page (at least --moves of them, each within
// --max-latency seconds). Every request the page makes must go to the page's own origin,
// and the console must stay free of errors. Writes a screenshot.
//
//   node viewer_check.mjs --url http://127.0.0.1:PORT/ --live http://127.0.0.1:P/live
//        --screenshot out.png [--moves 3] [--follow 20] [--max-latency 5] [--timeout 180]
// Prints one JSON line of what it measured; exits 1 naming the first failed check.
import puppeteer from "puppeteer-core";
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    live: { type: "string" },
    screenshot: { type: "string", default: "viewer.png" },
    moves: { type: "string", default: "3" },
    follow: { type: "string", default: "20" },
    "max-latency": { type: "string", default: "5" },
    timeout: { type: "string", default: "180" },
    width: { type: "string", default: "1400" },
    height: { type: "string", default: "1000" },
  },
});
if (!opts.url || !opts.live) {
  console.error("viewer_check: --url and --live are required");
  process.exit(2);
}
const timeoutMs = Number(opts.timeout) * 1000;
const maxLatencyMs = Number(opts["max-latency"]) * 1000;
const started = Date.now();
const log = (line) => console.error(`viewer_check: ${((Date.now() - started) / 1000).toFixed(1)} s: ${line}`);

function chromiumPath() {
  if (process.env.CHESSRL_CHROMIUM) return process.env.CHESSRL_CHROMIUM;
  try {
    return execFileSync("sh", ["-c", "command -v chromium"]).toString().trim();
  } catch {
    throw new Error("chromium not found (apt-get install chromium; deps/apt.txt lists it)");
  }
}

async function liveGame() {
  const response = await fetch(opts.live, { cache: "no-store" });
  if (!response.ok) throw new Error(`${opts.live}: HTTP ${response.status}`);
  return response.json();
}

const problems = [];
const origin = new URL(opts.url).origin;
const browser = await puppeteer.launch({
  executablePath: chromiumPath(),
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  defaultViewport: { width: Number(opts.width), height: Number(opts.height) },
});
const result = { url: opts.url };
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith("data:"))
      problems.push(`a request outside the page's origin: ${r.url()}`);
  });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
  page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });

  await page.goto(opts.url, { waitUntil: "load", timeout: timeoutMs });
  log("page loaded");
  const remaining = () => Math.max(1000, timeoutMs - (Date.now() - started));
  // A live board with its pieces and at least one move.
  await page.waitForSelector(".board-card .moves .move", { timeout: remaining() });
  result.live = await page.evaluate(() => {
    const card = document.querySelector(".board-card");
    return {
      cards: document.querySelectorAll(".board-card").length,
      pod: card.dataset.pod,
      model_version: card.querySelector(".model-version")?.textContent ?? "",
      moves: card.querySelectorAll(".moves .move").length,
      pieces: card.querySelectorAll(".board svg .piece, .board svg use").length,
      sources: document.querySelector("#sources")?.textContent ?? "",
    };
  });
  log(`live board: ${JSON.stringify(result.live)}`);
  if (!/^v\d+/.test(result.live.model_version.trim())) problems.push(`no model version on the live board: "${result.live.model_version}"`);
  if (result.live.pieces < 2) problems.push(`the live board shows ${result.live.pieces} pieces`);

  // The evaluator's games, the match table and the curve.
  await page.waitForSelector(".match-card .moves .move", { timeout: remaining() });
  await page.waitForFunction(() => Number(document.querySelector("#curve")?.dataset.points ?? 0) > 0,
                             { timeout: remaining() });
  result.evaluator = await page.evaluate(() => ({
    match_cards: document.querySelectorAll(".match-card").length,
    match_moves: document.querySelector(".match-card .moves")?.querySelectorAll(".move").length ?? 0,
    table_rows: document.querySelectorAll("#match-table tbody tr").length,
    curve_points: Number(document.querySelector("#curve").dataset.points),
    curve_canvas: document.querySelectorAll("#curve canvas").length,
  }));
  log(`evaluator: ${JSON.stringify(result.evaluator)}`);
  if (result.evaluator.table_rows < 1) problems.push("the match table is empty");
  if (result.evaluator.curve_canvas < 1) problems.push("the curve has no canvas");

  // Moves at the source, then on the page: the time between the two. For
  // --follow seconds, node polls the source (GET /live) every 50 ms and notes when
  // each ply of each game first appears there; the page notes each change of its
  // card (data-game, the count of moves). A sample is an update of the card: the
  // age of the newest move it shows.
  const pod = result.live.pod;
  await page.evaluate((p) => {
    window.__plies = [];
    const card = document.querySelector(`.board-card[data-pod="${CSS.escape(p)}"]`);
    let last = "";
    const note = () => {
      const g = card.dataset.game || "";
      const n = card.querySelectorAll(".moves .move").length;
      if (`${g}:${n}` !== last) window.__plies.push({ g, n, t: Date.now() });
      last = `${g}:${n}`;
    };
    new MutationObserver(note).observe(card, { subtree: true, childList: true, attributes: true });
    setInterval(note, 20);
  }, pod);
  const atSource = new Map(); // "game:ply" -> first time seen
  const followUntil = Date.now() + Number(opts.follow) * 1000;
  while (Date.now() < followUntil) {
    const live = await liveGame();
    const t = Date.now();
    if (live.pod === pod && live.game) {
      for (let n = 1; n <= live.game.moves.length; n++) {
        const key = `${live.game.id}:${n}`;
        if (!atSource.has(key)) atSource.set(key, t);
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // Each time the page shows a new move (a move added, or another game), its
  // newest move: how long since the source had it. (With fast games, as in the e2e
  // test, the page rarely shows one game twice: each update is another game.)
  const latencies = [];
  let prev = null;
  for (const rec of await page.evaluate(() => window.__plies)) {
    const seen = atSource.get(`${rec.g}:${rec.n}`);
    if (prev && rec.g && (rec.g !== prev.g || rec.n > prev.n) && seen !== undefined)
      latencies.push(rec.t - seen);
    prev = rec;
  }
  latencies.sort((a, b) => a - b);
  result.latency_ms = { samples: latencies.length, median: latencies[Math.floor(latencies.length / 2)] ?? null,
                        max: latencies.at(-1) ?? null };
  log(`a move at the source to the page: ${JSON.stringify(result.latency_ms)}`);
  const wantMoves = Number(opts.moves);
  if (latencies.length < wantMoves) problems.push(`saw ${latencies.length} of ${wantMoves} live moves reach the page in ${opts.follow} s`);
  if (latencies.some((ms) => ms > maxLatencyMs)) problems.push(`a move took ${result.latency_ms.max} ms to reach the page (at most ${maxLatencyMs})`);

  await page.screenshot({ path: opts.screenshot, fullPage: true });
  result.screenshot = opts.screenshot;
  result.js_heap_bytes = (await page.metrics()).JSHeapUsedSize;
} catch (e) {
  problems.push(e.message);
} finally {
  await browser.close();
}
result.problems = problems;
console.log(JSON.stringify(result));
if (problems.length) {
  console.error(`viewer_check: FAILED: ${problems[0]}`);
  process.exit(1);
}
log("passed");
