// chess-rl game viewer: polls api/state (served by chessrl-web) and shows the self-play
// games as they are played, the evaluator's newest matches and the Elo curve.
// Contract: services/web/README.md. Every URL is relative (the page may sit under a prefix),
// and every string from the data goes into the DOM through textContent.

import {Chessboard, FEN} from "../vendor/cm-chessboard/src/Chessboard.js"
import {Chess} from "../vendor/chess.js/chess.js"
import uPlot from "../vendor/uplot/uPlot.esm.js"

const STATE_URL = "api/state"
const DEFAULT_POLL_MS = 1000
const HOLD_FINISHED_MS = 2000 // after a live game ends, keep its final position this long (it adds to the delay of the next game)
const BOARD_PROPS = {
  position: FEN.start,
  assetsUrl: "vendor/cm-chessboard/assets/",
  style: {pieces: {file: "pieces/standard.svg"}, animationDuration: 200, showCoordinates: true},
}
const ANCHOR_COLORS = ["#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#65a30d"]

// ---------------------------------------------------------------- small helpers

/** Creates an element with a class and either text (via textContent: never parsed as HTML) or children. */
function el(tag, className = "", content = "") {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (Array.isArray(content)) node.append(...content)
  else if (content !== "") node.textContent = content
  return node
}

const clockTime = (ms) => new Date(ms).toLocaleTimeString([], {hour12: false})
const isNum = (x) => typeof x === "number" && Number.isFinite(x)
const signed = (x) => (Math.round(x) > 0 ? "+" : "") + Math.round(x)

// ---------------------------------------------------------------- games: SAN and a FEN per ply

/** One game as the viewer needs it: SAN per ply and the FEN after every ply (fens[0] = start). */
class GameLine {
  constructor(startFen) {
    this.chess = new Chess(startFen || FEN.start) // throws on a bad FEN
    this.fens = [this.chess.fen()]
    this.sans = []
    this.ucis = []
  }

  /** Plays one UCI move ("e2e4", "e7e8q"); false (and nothing changes) if it is not legal. */
  pushUci(uci) {
    try {
      const m = this.chess.move({from: uci.slice(0, 2), to: uci.slice(2, 4), promotion: uci[4]})
      this.sans.push(m.san)
      this.fens.push(m.after)
      this.ucis.push(uci)
      return true
    } catch {
      return false
    }
  }

  /** Parses one PGN game (chess.js loadPgn, [SetUp]/[FEN] honoured). Returns {headers, line}. */
  static fromPgn(text) {
    const chess = new Chess()
    chess.loadPgn(text)
    const moves = chess.history({verbose: true})
    const line = Object.create(GameLine.prototype)
    line.chess = null // a finished game never grows
    line.fens = [moves.length ? moves[0].before : chess.fen(), ...moves.map((m) => m.after)]
    line.sans = moves.map((m) => m.san)
    line.ucis = moves.map((m) => m.lan)
    return {headers: chess.getHeaders(), line}
  }
}

const EMPTY_LINE = new GameLine(FEN.start) // shown where there is no game

/** Splits a PGN file into its games: a blank line followed by an [Event tag starts a game. */
function splitPgn(text) {
  return (text || "").split(/\r?\n[ \t]*\r?\n(?=[ \t]*\[Event )/).filter((g) => g.trim() !== "")
}

// ---------------------------------------------------------------- a board with its move list

/**
 * A cm-chessboard plus a clickable SAN move list and navigation buttons. It follows the end
 * of its line until a move is clicked; follow() (the "live"/end button) goes back to the end.
 */
class GameView {
  constructor(parent, endLabel) {
    this.boardEl = el("div", "board")
    this.movesEl = el("div", "moves")
    this.movesEl.setAttribute("aria-label", "moves")
    const nav = el("div", "nav")
    const button = (label, title, action) => {
      const b = Object.assign(el("button", "", label), {type: "button", title})
      b.addEventListener("click", action)
      return nav.appendChild(b)
    }
    button("«", "start position", () => this.select(0))
    button("‹", "previous move", () => this.select(this.ply - 1))
    button("›", "next move", () => this.select(this.ply + 1))
    this.endButton = button(endLabel, "follow the game", () => this.follow())
    this.endButton.classList.add("end")
    parent.append(this.boardEl, nav, this.movesEl)
    // One listener for the whole list (no per-move listeners to leak).
    this.movesEl.addEventListener("click", (e) => {
      const span = e.target.closest(".move[data-ply]")
      if (span) this.select(Number(span.dataset.ply))
    })
    this.key = null // identifies the game shown (see show)
    this.line = null
    this.rendered = 0 // plies in the move list
    this.ply = 0 // ply on the board
    this.following = true // board at the end of the line (false once a viewer picks a ply)
    this.current = null // highlighted span.move
    this.board = null // created by the first draw(), with its position (no start-up animation)
    this.wanted = null // the newest position waiting for the board (see draw)
    this.drawing = false
    this.destroyed = false
  }

  /** Shows `line`; the same key means the same game, so only the new moves are appended. */
  show(line, key) {
    const sameGame = key === this.key
    if (!sameGame) {
      this.key = key
      this.rendered = 0
      this.movesEl.replaceChildren()
      this.current = null
      this.following = true
    }
    this.line = line
    for (let ply = this.rendered + 1; ply <= line.sans.length; ply++) this.appendMove(ply)
    this.rendered = line.sans.length
    if (this.following && (!sameGame || this.ply !== line.sans.length)) {
      this.goto(line.sans.length, sameGame)
      this.movesEl.scrollTop = this.movesEl.scrollHeight
    }
    this.endButton.classList.toggle("active", !this.following)
  }

  /** Adds "12." (before White's move) and the SAN of `ply` to the list. */
  appendMove(ply) {
    const fen = this.line.fens[ply - 1]
    const [, side, , , , full] = fen.split(" ")
    if (side === "w" || ply === 1) this.movesEl.append(el("span", "move-no", `${full}.`))
    if (side === "b" && ply === 1) this.movesEl.append(el("span", "move-gap", "…"))
    const span = el("span", "move", this.line.sans[ply - 1])
    span.dataset.ply = String(ply)
    this.movesEl.append(span)
  }

  /** A viewer picked a ply: show it and stop following the game. */
  select(ply) {
    if (!this.line) return
    this.following = false
    this.endButton.classList.add("active")
    this.goto(Math.max(0, Math.min(ply, this.line.sans.length)), true)
  }

  follow() {
    this.following = true
    this.endButton.classList.remove("active")
    if (this.line) this.goto(this.line.sans.length, true)
  }

  goto(ply, mayAnimate) {
    const animate = mayAnimate && Math.abs(ply - this.ply) === 1
    this.ply = ply
    this.boardEl.dataset.fen = this.line.fens[ply] // what the board shows (drawn on the next frames)
    this.draw(this.line.fens[ply], animate)
    if (this.current) this.current.classList.remove("current")
    this.current = ply > 0 ? this.movesEl.querySelector(`.move[data-ply="${ply}"]`) : null
    if (this.current) {
      this.current.classList.add("current")
      if (!this.following) this.current.scrollIntoView({block: "nearest"})
    }
  }

  /**
   * Puts `fen` on the board. cm-chessboard queues every setPosition and draws it on animation
   * frames, which stop in a hidden tab; so at most one is in flight and only the newest waits.
   */
  draw(fen, animate) {
    if (!this.board) {
      this.board = new Chessboard(this.boardEl, {...BOARD_PROPS, position: fen})
      return
    }
    this.wanted = {fen, animate}
    if (this.drawing) return
    const next = () => {
      const w = this.wanted
      this.wanted = null
      this.drawing = !!w && !this.destroyed
      if (this.drawing) this.board.setPosition(w.fen, w.animate).then(next, next)
    }
    next()
  }

  destroy() {
    this.destroyed = true
    this.board?.destroy()
  }
}

// ---------------------------------------------------------------- live self-play boards

const liveCards = new Map() // pod -> LiveCard

class LiveCard {
  constructor(pod) {
    this.versionEl = el("span", "model-version badge")
    this.gamesEl = el("span", "games")
    this.staleEl = el("span", "stale-marker badge")
    this.labelEl = el("div", "game-label")
    this.statusEl = el("div", "status")
    this.root = el("article", "card board-card", [el("header", "card-head", [
      Object.assign(el("div", "pod", pod), {title: pod}),
      el("div", "meta", [this.versionEl, this.gamesEl, this.staleEl])])])
    this.root.dataset.pod = pod
    this.view = new GameView(this.root, "live")
    this.root.append(this.labelEl, this.statusEl)
    this.gameId = null // id of the game on screen
    this.line = null
    this.lineSerial = 0 // bumped when the line is rebuilt
    this.holdUntil = 0 // Date.now() until which a just-finished game stays on screen
  }

  update(b, nowMs) {
    this.versionEl.textContent = isNum(b.model_version) ? `v${b.model_version}` : "v?"
    this.gamesEl.textContent = `${b.games_finished ?? 0} games`
    this.root.classList.toggle("stale", !!b.stale)
    this.staleEl.hidden = !b.stale
    const ago = isNum(nowMs) && isNum(b.seen_ms) ? ` · seen ${Math.round((nowMs - b.seen_ms) / 1000)} s ago` : ""
    this.staleEl.textContent = b.stale ? `stale${ago}` : ""
    const game = this.pick(b)
    if (game === undefined) return // the game being looked at is gone: keep the screen as it is
    if (!game) {
      this.gameId = null
      this.line = null
      delete this.root.dataset.game
      this.view.show(EMPTY_LINE, "none")
      this.labelEl.textContent = ""
      this.statusEl.textContent = "waiting for the first game"
      return
    }
    this.sync(game)
    this.root.dataset.game = game.id // the id of the game on screen
    this.view.show(this.line, `${game.id}#${this.lineSerial}`)
    this.labelEl.textContent = game === b.previous ? "previous game" : "current game"
    this.statusEl.textContent = game.in_progress
      ? `ply ${this.line.sans.length}, in progress`
      : `${game.result} ${game.termination}`.trim()
  }

  /**
   * Which game to show: the one a viewer is looking back at (undefined once it is gone),
   * else the finished previous game while the new one has no moves or for a few seconds
   * after the game on screen ended, else the game in progress.
   */
  pick(b) {
    const {game, previous} = b
    const isOnScreen = (g) => g && this.gameId !== null && g.id === this.gameId
    if (!this.view.following && this.gameId !== null) {
      return isOnScreen(game) ? game : isOnScreen(previous) ? previous : undefined
    }
    if (isOnScreen(previous) && !isOnScreen(game)) {
      if (!this.holdUntil) this.holdUntil = Date.now() + HOLD_FINISHED_MS
    } else {
      this.holdUntil = 0
    }
    const holding = this.holdUntil && Date.now() < this.holdUntil
    if (previous && (!game || !game.moves || game.moves.length === 0 || holding)) return previous
    return game || null
  }

  /** Brings this.line up to `game`: appends the new plies, rebuilds if it is another game. */
  sync(game) {
    const moves = Array.isArray(game.moves) ? game.moves : []
    const known = this.line ? this.line.ucis : []
    const extends_ = game.id === this.gameId && known.every((m, i) => moves[i] === m)
    if (!this.line || !extends_) {
      this.gameId = game.id
      this.lineSerial++
      try { this.line = new GameLine(game.start_fen) } catch { this.line = new GameLine(FEN.start) }
    }
    // Stops at an illegal move (never expected); the list then ends there.
    for (let i = this.line.ucis.length; i < moves.length; i++) {
      if (!this.line.pushUci(moves[i])) break
    }
  }

  destroy() {
    this.view.destroy()
    this.root.remove()
  }
}

function renderBoards(boards, nowMs) {
  const grid = document.getElementById("boards")
  const seen = new Set()
  boards.forEach((b, i) => {
    seen.add(b.pod)
    let card = liveCards.get(b.pod)
    if (!card) {
      card = new LiveCard(b.pod)
      liveCards.set(b.pod, card)
    }
    if (grid.children[i] !== card.root) grid.insertBefore(card.root, grid.children[i] || null)
    card.update(b, nowMs)
  })
  for (const [pod, card] of liveCards) {
    if (!seen.has(pod)) {
      card.destroy()
      liveCards.delete(pod)
    }
  }
  const empty = grid.querySelector(".empty")
  if (boards.length === 0 && !empty) grid.append(el("p", "empty", "No self-play pod is answering."))
  if (boards.length > 0 && empty) empty.remove()
}

// ---------------------------------------------------------------- evaluator: match cards

class MatchCard {
  constructor(kind, parent) {
    this.titleEl = el("h3", "card-title")
    this.picker = el("select", "game-picker")
    this.picker.setAttribute("aria-label", "game")
    this.picker.addEventListener("change", () => this.showGame(Number(this.picker.value)))
    this.root = parent.appendChild(el("article", "card match-card", [this.titleEl, this.picker]))
    this.root.dataset.kind = kind
    this.view = new GameView(this.root, "»")
    this.resultEl = this.root.appendChild(el("div", "result"))
    this.pgn = null
    this.serial = 0 // bumped per new PGN text: part of the view key
    this.games = []
  }

  /** info: the evaluator's "gating"/"gauntlet" object (or null); re-parsed only when the PGN changes. */
  update(info, title) {
    this.titleEl.textContent = info ? title : `${title}: none yet`
    const pgn = info ? info.pgn || "" : ""
    if (pgn === this.pgn) return
    this.pgn = pgn
    this.serial++
    this.games = splitPgn(pgn).map((text) => {
      try { return GameLine.fromPgn(text) } catch (e) { return {headers: {Termination: `unreadable game: ${e.message}`}, line: null} }
    })
    this.picker.replaceChildren(...this.games.map(({headers: h}, i) => Object.assign(
      el("option", "", `${h.White ?? "?"} – ${h.Black ?? "?"}, ${h.Result ?? "*"}, ${h.Termination ?? ""}`),
      {value: String(i)})))
    this.picker.disabled = this.games.length === 0
    this.showGame(0)
  }

  showGame(i) {
    const game = this.games[i]
    this.view.show(game?.line || EMPTY_LINE, `${this.serial}:${i}`)
    if (!game || !game.line) {
      this.resultEl.textContent = game ? game.headers.Termination : "no games"
      return
    }
    const h = game.headers
    const extra = [h.Opening, h.Round && `round ${h.Round}`].filter(Boolean).join(" · ")
    this.resultEl.textContent = `${h.Result ?? "*"} ${h.Termination ?? ""}`.trim() + (extra ? ` · ${extra}` : "")
  }
}

let gatingCard = null
let gauntletCard = null

function renderMatchCards(ev) {
  const parent = document.getElementById("match-cards")
  gatingCard ??= new MatchCard("gating", parent)
  gauntletCard ??= new MatchCard("gauntlet", parent)
  const g = ev && ev.gating
  const a = ev && ev.gauntlet
  gatingCard.update(g, g ? `Gating: v${g.candidate} vs best v${g.opponent_version ?? "?"}` : "Gating")
  gauntletCard.update(a, a ? `Gauntlet: v${a.candidate} vs the anchors` : "Gauntlet")
}

// ---------------------------------------------------------------- evaluator: table of matches

let tableKey = null

function renderMatchTable(matches) {
  const key = matches.length ? `${matches.length}|${matches[0].time}` : "0"
  if (key === tableKey) return // unchanged: keep the rows (and any text selection)
  tableKey = key
  const bound = (x) => (isNum(x) ? signed(x) : "?")
  const rows = matches.map((m) => el("tr", m.promoted ? "promoted" : "", [
    el("td", "", m.time ? clockTime(Date.parse(m.time)) : ""),
    el("td", "", `v${m.candidate}`),
    el("td", "", m.opponent === "best" ? `best (v${m.opponent_version ?? "?"})` : String(m.opponent)),
    el("td", "num", `+${m.wins} =${m.draws} −${m.losses}`),
    el("td", "num", isNum(m.score) ? m.score.toFixed(2) : ""),
    el("td", "num", isNum(m.elo) ? `${signed(m.elo)} [${bound(m.lower)}, ${bound(m.upper)}]` : "—"),
    el("td", "check", m.promoted ? "✓" : ""),
  ]))
  if (rows.length === 0) rows.push(el("tr", "", [Object.assign(el("td", "empty", "No matches yet."), {colSpan: 7})]))
  document.querySelector("#match-table tbody").replaceChildren(...rows)
}

// ---------------------------------------------------------------- evaluator: Elo curve

let plot = null
let plotAnchors = ""
let curveKey = null

/** uPlot data: x = candidates, then (elo, lower, upper) per anchor; newest match per pair wins. */
function curveData(matches) {
  const newest = new Map() // "candidate|anchor" -> match (matches come newest first)
  for (const m of matches) {
    if (m.opponent === "best" || !isNum(m.elo)) continue
    const k = `${m.candidate}|${m.opponent}`
    if (!newest.has(k)) newest.set(k, m)
  }
  const anchors = [...new Set([...newest.values()].map((m) => m.opponent))].sort()
  const xs = [...new Set([...newest.values()].map((m) => m.candidate))].sort((a, b) => a - b)
  const data = [xs]
  for (const anchor of anchors) {
    const at = xs.map((x) => newest.get(`${x}|${anchor}`))
    data.push(at.map((m) => (m ? m.elo : null)))
    data.push(at.map((m) => (m ? (isNum(m.lower) ? m.lower : m.elo) : null)))
    data.push(at.map((m) => (m ? (isNum(m.upper) ? m.upper : m.elo) : null)))
  }
  return {anchors, data, points: newest.size}
}

function plotOptions(anchors, width) {
  const series = [{label: "candidate"}]
  const bands = []
  anchors.forEach((anchor, i) => {
    const color = ANCHOR_COLORS[i % ANCHOR_COLORS.length]
    const edge = {stroke: `${color}55`, width: 1, points: {show: false}, spanGaps: true}
    series.push({label: anchor, stroke: color, width: 2, spanGaps: true, points: {size: 7, fill: color}},
      {...edge, label: `${anchor} lower`}, {...edge, label: `${anchor} upper`})
    bands.push({series: [3 + 3 * i, 2 + 3 * i], fill: `${color}26`}) // upper, lower
  })
  return {
    width, height: 300, series, bands,
    legend: {show: false},
    cursor: {points: {show: false}},
    scales: {
      x: {time: false, range: (u, min, max) => [min - 0.5, max + 0.5]},
      y: {range: (u, min, max) => [Math.min(min, -100) - 25, Math.max(max, 100) + 25]},
    },
    axes: [
      {label: "candidate version", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500],
        values: (u, splits) => splits.map((v) => (Number.isInteger(v) ? `v${v}` : ""))},
      {label: "Elo", values: (u, splits) => splits.map((v) => signed(v))},
    ],
  }
}

function renderLegend(anchors) {
  const items = anchors.map((anchor, i) => {
    const swatch = el("span", "swatch")
    swatch.style.background = ANCHOR_COLORS[i % ANCHOR_COLORS.length]
    return el("span", "legend-item", [swatch, el("span", "", `vs ${anchor}`)])
  })
  if (anchors.length) items.push(el("span", "legend-note", "shaded: Elo interval [lower, upper]"))
  document.getElementById("curve-legend").replaceChildren(...items)
}

function renderCurve(matches) {
  const box = document.getElementById("curve")
  const {anchors, data, points} = curveData(matches)
  box.dataset.points = String(points)
  const key = JSON.stringify(data)
  if (key === curveKey) return
  curveKey = key
  if (points === 0) {
    plot?.destroy()
    plot = null
    plotAnchors = ""
    box.replaceChildren(el("p", "empty", "No anchor matches yet: the curve appears after the first gauntlet."))
    renderLegend([])
    return
  }
  if (plot && plotAnchors === anchors.join("\n")) {
    plot.setData(data)
    return
  }
  plot?.destroy()
  box.replaceChildren()
  plot = new uPlot(plotOptions(anchors, box.clientWidth || 600), data, box)
  plotAnchors = anchors.join("\n")
  renderLegend(anchors)
}

// Keeps the plot as wide as its panel.
new ResizeObserver(() => {
  const box = document.getElementById("curve")
  if (plot && box.clientWidth > 0 && box.clientWidth !== plot.width) plot.setSize({width: box.clientWidth, height: 300})
}).observe(document.getElementById("curve"))

// ---------------------------------------------------------------- header: sources, banner

/** [class, text] for the self-play part of the #sources line. */
function selfplaySource(sp) {
  if (!sp || !sp.configured) return ["muted", "self-play: not configured"]
  const pods = sp.pods ?? 0
  const answering = Math.max(0, pods - (sp.unreachable ?? 0))
  const text = pods ? `self-play: ${answering} of ${pods} pods answering` : "self-play: no pods found"
  return [answering < pods || !pods || sp.error ? "bad" : "ok", text + (sp.error ? ` (${sp.error})` : "")]
}

/** [class, text] for the evaluator part of the #sources line. */
function evaluatorSource(ev) {
  if (!ev || !ev.configured) return ["muted", "evaluator: not configured"]
  if (ev.ok) return ["ok", "evaluator: answering"]
  const since = ev.last_ok_ms ? `last answer ${clockTime(ev.last_ok_ms)}` : "never answered"
  return ["bad", `evaluator: not answering, ${since}` + (ev.error ? ` (${ev.error})` : "")]
}

function renderSources(sources, ev) {
  const [sp, evs] = [selfplaySource(sources?.selfplay), evaluatorSource(sources?.evaluator)]
  document.getElementById("sources").replaceChildren(el("span", ...sp), el("span", "sep", " · "), el("span", ...evs))
  document.getElementById("best-version").textContent = isNum(ev?.best_version) ? `best model v${ev.best_version}` : ""
}

let lastAppliedMs = 0

function setError(err) {
  const banner = document.getElementById("banner")
  banner.hidden = !err
  if (!err) return void delete document.body.dataset.stateError
  const msg = String(err.message || err)
  document.body.dataset.stateError = msg
  banner.textContent = `Cannot read api/state (${msg}). ` +
    (lastAppliedMs ? `Showing the data from ${clockTime(lastAppliedMs)}; retrying.` : "Retrying.")
  banner.hidden = false
}

// ---------------------------------------------------------------- polling

function apply(state) {
  const ev = state.evaluator || null
  renderSources(state.sources, ev)
  renderBoards(Array.isArray(state.boards) ? state.boards : [], state.now_ms)
  renderMatchCards(ev)
  const matches = ev && Array.isArray(ev.matches) ? ev.matches : []
  renderMatchTable(matches)
  renderCurve(matches)
  lastAppliedMs = state.now_ms
  document.body.dataset.updated = String(state.now_ms)
}

let pollMs = DEFAULT_POLL_MS

/** Fetches and applies api/state, then schedules the next poll (never two at once). */
async function poll() {
  try {
    const res = await fetch(STATE_URL, {cache: "no-store", signal: AbortSignal.timeout(Math.max(5000, 3 * pollMs))})
    if (!res.ok) throw new Error(`HTTP ${res.status}`)
    const state = await res.json()
    if (isNum(state.poll_interval_ms) && state.poll_interval_ms >= 100) pollMs = state.poll_interval_ms
    apply(state)
    setError(null)
  } catch (err) {
    setError(err)
  }
  setTimeout(poll, pollMs)
}

poll()
