/**
 * The look shared by the web app and the live-browser page: colours, type, cards, fields and
 * buttons. Plain CSS, no build step.
 */
export const THEME_CSS = `
  :root { color-scheme: light; --ink:#1d2330; --muted:#5b6475; --line:#dde2ea; --field:#b9c1cf; --paper:#f4f6fa; --accent:#2458d6; --accent-dark:#1b44a8; --ok:#17803d; --bad:#b42318; --warn:#8a5300; }
  * { box-sizing: border-box; }
  body { margin:0; font:15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--ink); background:var(--paper); }
  .card { background:#fff; border:1px solid var(--line); border-radius:10px; padding:1rem; margin-bottom:1rem; overflow-wrap:anywhere; }
  .kind { display:inline-block; font-size:.75rem; font-weight:600; text-transform:uppercase; letter-spacing:.04em; color:var(--accent); }
  .countdown { font-variant-numeric: tabular-nums; font-weight:600; }
  .status { font-weight:600; }
  .status.succeeded, .status.connected { color:var(--ok); } .status.failed, .status.canceled, .status.expired, .status.needs_auth, .status.blocked { color:var(--bad); }
  .status.needs_input { color:var(--warn); }
  label { display:block; font-weight:600; margin:.5rem 0 .25rem; }
  input[type=text], input[type=password], input[type=number], input[type=url], select, textarea { width:100%; padding:.55rem .6rem; font:inherit; color:inherit; background:#fff; border:1px solid var(--field); border-radius:8px; }
  textarea { min-height:6rem; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:.9rem; }
  button, .button { display:inline-block; margin-top:.5rem; padding:.5rem .9rem; font:inherit; font-weight:600; line-height:1.3; color:#fff; background:var(--accent); border:1px solid var(--accent); border-radius:8px; cursor:pointer; text-decoration:none; }
  button:hover, .button:hover { background:var(--accent-dark); }
  button.secondary, .button.secondary { color:var(--accent); background:#fff; }
  button.secondary:hover, .button.secondary:hover { background:#eef3ff; }
  button.danger { background:var(--bad); border-color:var(--bad); }
  :focus-visible { outline:3px solid #f5b400; outline-offset:2px; }
  .note { color:var(--muted); font-size:.85rem; }
  [hidden] { display:none !important; }
`;
