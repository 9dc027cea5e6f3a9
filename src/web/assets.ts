import { createHash } from "node:crypto";
import { THEME_CSS } from "./theme.js";

/** The web app's one stylesheet: the shared theme plus layout, navigation and tables. */
export const APP_CSS = `${THEME_CSS}
  .skip { position:absolute; left:-999px; top:0; background:#fff; padding:.5rem 1rem; z-index:10; }
  .skip:focus { left:.5rem; }
  .visually-hidden { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
  header.top { display:flex; flex-wrap:wrap; gap:.5rem 1.25rem; align-items:center; padding:.6rem 1rem; background:#fff; border-bottom:1px solid var(--line); }
  header.top .brand { font-weight:700; color:var(--ink); text-decoration:none; }
  header.top nav ul { display:flex; flex-wrap:wrap; gap:.25rem; list-style:none; margin:0; padding:0; }
  header.top nav a { display:block; padding:.35rem .6rem; border-radius:6px; color:var(--ink); text-decoration:none; font-weight:600; }
  header.top nav a:hover { background:#eef3ff; }
  header.top nav a[aria-current=page] { background:var(--accent); color:#fff; }
  header.top .who { margin-left:auto; display:flex; flex-wrap:wrap; gap:.5rem; align-items:center; color:var(--muted); font-size:.85rem; }
  header.top .who form { margin:0; }
  button.small, .button.small { margin:0; padding:.25rem .6rem; font-size:.85rem; }
  main { max-width:1100px; margin:0 auto; padding:1rem; }
  h1 { font-size:1.5rem; margin:.5rem 0 1rem; overflow-wrap:anywhere; }
  h2 { font-size:1.15rem; margin:0 0 .5rem; }
  a { color:var(--accent); }
  .notice { background:#eef3ff; border:1px solid #c9d6f5; border-radius:10px; padding:.6rem 1rem; }
  .error { background:#fdf0ef; border:1px solid #f1c4bf; border-radius:10px; padding:.6rem 1rem; color:var(--bad); }
  .field-error { color:var(--bad); font-size:.85rem; margin:.25rem 0 0; }
  .grid { display:grid; grid-template-columns: minmax(0,2fr) minmax(0,1fr); gap:1rem; align-items:start; }
  @media (max-width: 800px) { .grid { grid-template-columns: minmax(0,1fr); } main { padding:.6rem; } }
  @media (max-width: 640px) { header.top nav { order:3; flex-basis:100%; } header.top nav a { padding:.35rem .5rem; } }
  .row { display:flex; flex-wrap:wrap; gap:.5rem; align-items:end; }
  .row > * { flex: 1 1 14rem; }
  .row > button, .row > .button { flex: 0 0 auto; }
  .actions-bar { display:flex; flex-wrap:wrap; gap:.5rem; align-items:center; }
  .actions-bar h1 { margin:.5rem auto .5rem 0; }
  .actions-bar form { margin:0; }
  dl.facts { display:grid; grid-template-columns: max-content minmax(0,1fr); gap:.35rem 1rem; margin:0; }
  dl.facts dt { color:var(--muted); }
  dl.facts dd { margin:0; overflow-wrap:anywhere; }
  pre { background:#f7f8fb; border:1px solid var(--line); border-radius:8px; padding:.6rem; overflow:auto; white-space:pre-wrap; overflow-wrap:anywhere; font-size:.85rem; margin:.25rem 0; }
  .big { font-size:2rem; font-weight:700; font-variant-numeric: tabular-nums; }
  .secret { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap:anywhere; background:#fff8e6; border:1px solid #f0d9a0; border-radius:8px; padding:.6rem; }
  .table { overflow-x:auto; background:#fff; border:1px solid var(--line); border-radius:10px; }
  table { width:100%; border-collapse:collapse; }
  th, td { text-align:left; padding:.5rem .75rem; border-bottom:1px solid var(--line); vertical-align:top; overflow-wrap:anywhere; }
  th { white-space:nowrap; overflow-wrap:normal; font-size:.8rem; text-transform:uppercase; letter-spacing:.03em; color:var(--muted); }
  tbody tr:last-child td { border-bottom:0; }
  @media (max-width: 640px) {
    table, thead, tbody, tr, td { display:block; }
    thead { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
    tr { border-bottom:1px solid var(--line); padding:.4rem 0; }
    tbody tr:last-child { border-bottom:0; }
    td { border:0; padding:.2rem .75rem; display:grid; grid-template-columns: 7.5rem minmax(0,1fr); gap:.5rem; }
    td::before { content: attr(data-label); color:var(--muted); font-size:.8rem; text-transform:uppercase; letter-spacing:.03em; }
  }
  .empty { color:var(--muted); }
  fieldset { border:1px solid var(--line); border-radius:8px; margin:.5rem 0; padding:.25rem .75rem .75rem; }
  legend { font-weight:600; padding:0 .25rem; }
  .check { display:flex; gap:.5rem; align-items:center; font-weight:400; }
  .check input { width:auto; }
  details > summary { cursor:pointer; color:var(--accent); font-weight:600; }
  .pager { margin-top:.75rem; }
  .js .without-script { display:none; }
  .sign-in { max-width:28rem; margin:3rem auto; }
  .spaced { margin-top:1rem; }
`;

/**
 * The web app's one script: countdowns, live status (from the event stream), choosing an
 * action type, copying, and paying a top-up from a browser wallet (EIP-1193, x402 exact on EVM).
 */
export const APP_JS = `"use strict";
document.documentElement.classList.add("js");
document.addEventListener("DOMContentLoaded", () => {
  const $ = (selector, root = document) => root.querySelector(selector);
  const csrf = () => ($('meta[name="csrf-token"]') || {}).content || "";

  // Countdowns to a challenge's deadline.
  const countdowns = document.querySelectorAll("[data-deadline]");
  const tick = () => countdowns.forEach((element) => {
    const left = Math.max(0, Math.round((Date.parse(element.dataset.deadline) - Date.now()) / 1000));
    element.textContent = left === 0 ? "expired" : Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
  });
  if (countdowns.length) { tick(); setInterval(tick, 1000); }

  // Choosing an account or action type shows that type's fields at once.
  document.querySelectorAll("select[data-autosubmit]").forEach((select) => select.addEventListener("change", () => select.form.requestSubmit()));

  // The latest of this page, without the one-time notice of what was just done ("?done=…"): it told what was, not what is.
  const showLatest = () => {
    const url = new URL(location.href);
    if (!url.searchParams.has("done")) return location.reload();
    url.searchParams.delete("done");
    location.replace(url.href);
  };
  document.querySelectorAll("[data-reload]").forEach((button) => button.addEventListener("click", showLatest));
  document.querySelectorAll("[data-copy]").forEach((button) => button.addEventListener("click", async () => {
    const source = document.getElementById(button.dataset.copy);
    try { await navigator.clipboard.writeText(source.value || source.textContent); button.textContent = "Copied"; } catch { source.select && source.select(); }
  }));

  // Live status: the page names the events it follows (type:id, or type:* for any); when one
  // arrives it reloads (unless something is being typed: then it says so and waits to be asked).
  // A form being sent is never cut off by a reload: its own change (an account added) is an event too.
  const main = document.getElementById("main");
  if (main && main.dataset.watch && window.EventSource) {
    const watched = main.dataset.watch.split(",");
    const source = new EventSource("/app/events?after=" + encodeURIComponent(main.dataset.after || ""));
    document.addEventListener("submit", (event) => { if (!event.defaultPrevented) source.close(); });
    const follow = (message) => {
      const event = JSON.parse(message.data);
      if (!watched.includes(event.type + ":*") && !watched.includes(event.type + ":" + event.data.id)) return;
      source.close();
      const active = document.activeElement;
      if (active && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) && active.value) { document.getElementById("changed").hidden = false; return; }
      showLatest();
    };
    source.addEventListener("action.updated", follow);
    source.addEventListener("account.updated", follow);
  }

  // Top-up: ask for the x402 requirements, have the wallet sign an EIP-3009 authorization, pay.
  const topUp = document.getElementById("top-up");
  if (topUp) topUp.addEventListener("submit", async (event) => {
    event.preventDefault();
    const say = (text) => { $("#top-up-result").textContent = text; };
    const button = $("button[type=submit]", topUp);
    const wallet = window.ethereum;
    if (!wallet || typeof wallet.request !== "function") return say("No browser wallet was found. Add one (any EIP-1193 wallet), or pay through the API: POST /v1/credits/top-ups.");
    const credits = Number(topUp.elements.credits.value);
    const post = async (body) => {
      const response = await fetch("/app/credits/top-ups", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": csrf() }, body: JSON.stringify(body) });
      return { status: response.status, body: await response.json().catch(() => ({})) };
    };
    button.disabled = true;
    // Which step failed decides what to say: before signing nothing can have been paid.
    let step = "ask";
    let chainId;
    try {
      say("Asking for the payment requirements…");
      const asked = await post({ credits });
      if (asked.status !== 402) return say((asked.body.error && asked.body.error.message) || "Top-ups are not available.");
      const required = asked.body.payment_required;
      const accepted = required.accepts[0];
      chainId = Number(accepted.network.split(":")[1]);
      step = "wallet";
      say("Connect your wallet…");
      const [from] = await wallet.request({ method: "eth_requestAccounts" });
      if (parseInt(await wallet.request({ method: "eth_chainId" }), 16) !== chainId) {
        say("Switch your wallet to chain " + chainId + "…");
        step = "switch";
        await wallet.request({ method: "wallet_switchEthereumChain", params: [{ chainId: "0x" + chainId.toString(16) }] });
        step = "wallet";
      }
      const now = Math.floor(Date.now() / 1000);
      const nonce = "0x" + Array.from(crypto.getRandomValues(new Uint8Array(32)), (byte) => byte.toString(16).padStart(2, "0")).join("");
      const authorization = { from, to: accepted.payTo, value: accepted.amount, validAfter: String(now - 600), validBefore: String(now + accepted.maxTimeoutSeconds), nonce };
      const typedData = {
        types: {
          EIP712Domain: [{ name: "name", type: "string" }, { name: "version", type: "string" }, { name: "chainId", type: "uint256" }, { name: "verifyingContract", type: "address" }],
          TransferWithAuthorization: [{ name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" }, { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" }],
        },
        domain: { name: accepted.extra.name, version: accepted.extra.version, chainId, verifyingContract: accepted.asset },
        primaryType: "TransferWithAuthorization",
        message: authorization,
      };
      say("Sign the payment in your wallet…");
      const signature = await wallet.request({ method: "eth_signTypedData_v4", params: [from, JSON.stringify(typedData)] });
      step = "pay";
      say("Paying…");
      const payload = { x402Version: 2, resource: required.resource, accepted, payload: { signature, authorization } };
      const paid = await post({ credits, payment_signature: btoa(JSON.stringify(payload)) });
      if (paid.status !== 200) return say((paid.body.error && paid.body.error.message) || "The payment was not accepted; nothing was charged.");
      $("#balance").textContent = paid.body.balance;
      say("Paid: " + paid.body.credited + " credits added (transaction " + paid.body.transaction + ").");
      setTimeout(() => location.assign("/app/credits?done=top_up"), 1200);
    } catch (error) {
      const reason = (error && error.message) || String(error);
      if (error && error.code === 4001) say("You declined in the wallet; nothing was paid.");
      else if (step === "switch") say("Your wallet could not switch to chain " + chainId + " (" + reason + "). Add that network to the wallet, then try again; nothing was paid.");
      else if (step === "pay") say("The signed payment could not be sent (" + reason + "). Reload this page before trying again: if it was settled, its credits are in the ledger, and a payment is never credited twice.");
      else if (step === "wallet") say("The wallet did not sign (" + reason + "); nothing was paid.");
      else say("The payment requirements could not be fetched (" + reason + "); nothing was paid.");
    } finally {
      button.disabled = false;
    }
  });
});
`;

/** Changes whenever the assets do, so a cached copy is never used with a newer page. */
export const ASSET_VERSION = createHash("sha256").update(APP_CSS).update(APP_JS).digest("hex").slice(0, 12);
