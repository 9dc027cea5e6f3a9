import { THEME_CSS } from "../../web/theme.js";

/** The live-browser page: server-rendered shell, all behaviour in one nonce'd script. */
export function livePage(nonce: string, title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${THEME_CSS}
  header { display:flex; gap:.75rem; align-items:center; padding:.6rem 1rem; background:#fff; border-bottom:1px solid var(--line); }
  header strong { font-size:1rem; }
  header .who { color:var(--muted); overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
  main { display:grid; grid-template-columns: minmax(0,1fr) 20rem; gap:1rem; padding:1rem; max-width:1400px; margin:0 auto; }
  @media (max-width: 800px) { main { grid-template-columns: 1fr; padding:.5rem; } aside { order:-1; } }
  .screen { position:relative; background:#fff; border:1px solid var(--line); border-radius:10px; overflow:hidden; min-height:12rem; touch-action: pan-y; }
  .screen img { display:block; width:100%; height:auto; cursor:pointer; user-select:none; -webkit-user-drag:none; }
  .screen .idle { padding:3rem 1rem; text-align:center; color:var(--muted); }
</style>
</head>
<body>
<header><strong>Live browser</strong><span class="who" id="who"></span></header>
<main>
  <section class="screen" aria-label="The account's browser page">
    <img id="screen" alt="The account's browser page; click or tap to interact" hidden>
    <p class="idle" id="idle">Connecting to the browser…</p>
  </section>
  <aside>
    <div class="card" aria-live="polite">
      <span class="kind" id="kind"></span>
      <p id="message"></p>
      <p>Status: <span class="status" id="status">…</span></p>
      <p id="deadline-line" hidden>Time left: <span class="countdown" id="countdown"></span></p>
      <p class="note" id="outcome" hidden></p>
    </div>
    <form class="card" id="answer-form" hidden>
      <label for="answer">Code</label>
      <input type="text" id="answer" name="answer" autocomplete="one-time-code" inputmode="numeric" required>
      <button type="submit">Send answer</button>
      <p class="note" id="answer-result" role="status"></p>
    </form>
    <form class="card" id="type-form">
      <label for="typed">Type into the page</label>
      <input type="text" id="typed" autocomplete="off">
      <button type="submit">Type</button>
      <p class="note">Click a field in the page first. On a computer you can also type directly while the page has focus.</p>
    </form>
  </aside>
</main>
<script nonce="${nonce}">
(() => {
  const base = location.pathname.replace(/\\/$/, "");
  const $ = (id) => document.getElementById(id);
  const img = $("screen");
  let frame = { width: 1280, height: 800 };
  let socket;
  let deadline;
  const KIND_NAMES = { two_factor_code: "Authenticator code", email_code: "Emailed code", sms_code: "Texted code",
    device_approval: "Device approval", captcha: "Puzzle", other: "Sign-in step", sign_in: "Sign in" };

  function render(state) {
    $("who").textContent = [state.platform, state.username].filter(Boolean).join(" · ");
    $("kind").textContent = KIND_NAMES[state.challenge ? state.challenge.kind : "sign_in"] || "";
    $("message").textContent = state.challenge ? state.challenge.message : "Sign in to the account in the page below. Challenges included; the session is saved once you are in.";
    $("status").textContent = state.status;
    $("status").className = "status " + state.status;
    deadline = state.challenge ? Date.parse(state.challenge.expires_at) : undefined;
    $("deadline-line").hidden = !deadline;
    tick();
    $("answer-form").hidden = !state.answerable;
    if (state.outcome) {
      $("outcome").hidden = false;
      $("outcome").textContent = state.outcome;
    }
    if (state.final) stopStream();
  }
  function tick() {
    if (!deadline) return;
    const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    $("countdown").textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
  }
  setInterval(tick, 1000);

  function stopStream() {
    if (socket) socket.close();
    socket = undefined;
    img.hidden = true;
    $("idle").hidden = false;
    $("idle").textContent = "The browser view has ended.";
  }
  function send(message) { if (socket && socket.readyState === 1) socket.send(JSON.stringify(message)); }
  function point(event) {
    const box = img.getBoundingClientRect();
    return { x: Math.round((event.clientX - box.left) / box.width * frame.width), y: Math.round((event.clientY - box.top) / box.height * frame.height) };
  }

  function connect() {
    const url = new URL(base + "/ws", location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("w", String(Math.round(window.innerWidth * (window.devicePixelRatio || 1))));
    url.searchParams.set("h", String(Math.round(window.innerHeight * (window.devicePixelRatio || 1))));
    socket = new WebSocket(url);
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "frame") {
        frame = { width: message.width, height: message.height };
        img.src = "data:image/jpeg;base64," + message.data;
        img.hidden = false;
        $("idle").hidden = true;
      } else if (message.type === "state") render(message);
    };
    socket.onclose = () => { if (!img.hidden) { $("idle").hidden = false; $("idle").textContent = "Disconnected."; } };
  }

  img.addEventListener("click", (event) => { img.focus(); send({ type: "click", ...point(event) }); });
  img.addEventListener("wheel", (event) => { event.preventDefault(); send({ type: "wheel", ...point(event), dx: event.deltaX, dy: event.deltaY }); }, { passive: false });
  img.tabIndex = 0;
  img.addEventListener("keydown", (event) => {
    if (event.metaKey || event.ctrlKey) return;
    event.preventDefault();
    send({ type: "key", key: event.key.length === 1 || ["Enter","Backspace","Tab","Escape","Delete","ArrowLeft","ArrowUp","ArrowRight","ArrowDown"].includes(event.key) ? event.key : "" });
  });
  $("type-form").addEventListener("submit", (event) => { event.preventDefault(); send({ type: "text", text: $("typed").value }); $("typed").value = ""; });
  $("answer-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("answer-result").textContent = "Sending…";
    const response = await fetch(base + "/answer", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ answer: $("answer").value }) });
    const body = await response.json();
    $("answer-result").textContent = response.ok ? "Sent. Waiting for the platform…" : (body.error && body.error.message) || "Not accepted.";
    if (response.ok) { $("answer").value = ""; render(body); }
  });

  fetch(base + "/state").then((r) => r.json()).then((state) => { render(state); if (!state.final) connect(); });
})();
</script>
</body>
</html>`;
}

export function messagePage(nonce: string, title: string, text: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1d2330}</style></head>
<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
