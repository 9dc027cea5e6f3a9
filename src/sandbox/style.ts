/** The site's stylesheet, inlined in every page: classic (top bar, blue) and redesign (side rail, green). */
export const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 "Liberation Sans","DejaVu Sans",Arial,sans-serif;color:#1c1e21;background:#f0f2f5}
a{color:#1b5fd1;text-decoration:none}
a:hover{text-decoration:underline}
h1{font-size:22px;margin:0 0 12px}
h2{font-size:17px;margin:20px 0 10px}
.wrap{max-width:680px;margin:0 auto;padding:0 16px}
.topbar{background:#fff;border-bottom:1px solid #dadde1;box-shadow:0 1px 2px rgba(0,0,0,.05);margin-bottom:20px}
.bar{display:flex;align-items:center;justify-content:space-between;height:56px}
.brand{font-weight:700;font-size:19px;color:#1b5fd1;display:flex;align-items:center;gap:8px}
.brand:hover{text-decoration:none}
.logo{display:inline-grid;place-items:center;width:30px;height:30px;border-radius:50%;background:#1b5fd1;color:#fff;font-size:16px}
nav{display:flex;align-items:center;gap:18px}
nav a{color:#444;font-weight:600}
form.inline{display:inline;margin:0}
button{font:inherit;font-weight:600;border:0;border-radius:6px;padding:8px 18px;background:#1b5fd1;color:#fff;cursor:pointer}
button:hover{background:#174ea6}
button.link{background:none;color:#444;padding:0}
button.secondary{background:#e4e6eb;color:#1c1e21}
.button{display:inline-block;font-weight:600;border-radius:6px;padding:7px 16px;background:#e7f0fd;color:#1b5fd1}
.card{background:#fff;border-radius:10px;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:16px 18px;margin-bottom:14px}
.narrow{max-width:400px;margin:30px auto}
label{display:block;font-weight:600;margin:10px 0 4px}
form>label:first-of-type{margin-top:0}
label.check{display:flex;align-items:center;gap:8px;font-weight:400}
input[type=text],input[type=password],input:not([type]),textarea{width:100%;font:inherit;padding:9px 11px;border:1px solid #ccd0d5;border-radius:6px;background:#fff}
textarea{resize:vertical;min-height:72px}
.actions{display:flex;gap:10px;align-items:center;margin-top:12px}
.alert{padding:10px 12px;border-radius:6px;margin:0 0 12px}
.alert.error{background:#fdecea;color:#a61b1b;border:1px solid #f5c2c0}
.alert.notice{background:#e8f5e9;color:#1e6b2a;border:1px solid #b9dfbe}
.muted{color:#65676b}
.post header,.message .meta{display:flex;gap:6px;align-items:baseline;flex-wrap:wrap;color:#65676b;font-size:13px}
.post .author,.message .from{font-weight:700;color:#1c1e21;font-size:15px}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:6px 0 0}
.profile{display:grid;grid-template-columns:72px 1fr;gap:4px 16px;align-items:center}
.profile h1{margin:0}
.avatar{width:72px;height:72px;border-radius:50%;background:linear-gradient(135deg,#6aa5ff,#1b5fd1);color:#fff;display:grid;place-items:center;font-size:30px;font-weight:700;grid-row:span 3}
.handle{color:#65676b;margin:0 0 6px}
.conversations{list-style:none;padding:0;margin:0}
.conversations li{border-top:1px solid #eceef1;padding:10px 0}
.conversations li:first-child{border-top:0}
.messages{list-style:none;padding:0;margin:0 0 14px}
.message{background:#f0f2f5;border-radius:12px;padding:8px 12px;margin:8px 0;max-width:85%}
.message .meta{margin:0}
.message .text{margin-top:2px}
.message.mine{background:#e7f0fd;margin-left:auto}
.prompt{background:#1b5fd1;color:#fff;border-radius:8px;padding:12px 14px;margin:0 0 4px}
.prompt strong{display:block;font-size:22px}
.redesign .prompt{background:#1f7a4d}
.grid{display:grid;grid-template-columns:repeat(3,1fr);gap:8px;margin:12px 0}
.tile{display:flex;flex-direction:column;align-items:center;gap:2px;padding:14px 4px;background:#f5f6f7;color:#1c1e21;border:2px solid #dadde1;border-radius:8px}
.tile:hover{background:#eceef1}
.tile[aria-pressed=true]{border-color:#1b5fd1;background:#e7f0fd}
.tile .symbol{font-size:34px;line-height:1.1}
.tile .word{font-weight:400;font-size:13px}
.spinner{width:28px;height:28px;border:3px solid #dadde1;border-top-color:#1b5fd1;border-radius:50%;animation:spin 1s linear infinite;margin:10px 0}
@keyframes spin{to{transform:rotate(360deg)}}
.footer{color:#8a8d91;font-size:12px;padding:20px 16px 30px;text-align:center}
body.redesign{background:#f7f7f2;color:#20231f}
.redesign a{color:#1f7a4d}
.shell{display:grid;grid-template-columns:210px 1fr;min-height:100vh}
.rail{background:#13261d;padding:22px 18px;display:flex;flex-direction:column;gap:24px}
.rail .brand{color:#c9f2dc;font-size:20px;letter-spacing:.5px}
.rail nav{flex-direction:column;align-items:stretch;gap:6px}
.rail ul{list-style:none;margin:0;padding:0}
.rail nav a{display:block;color:#e3efe8;padding:8px 10px;border-radius:8px}
.rail nav a:hover{background:#1f3b2d;text-decoration:none}
.stage main{max-width:640px;padding:28px 24px}
.redesign button{background:#1f7a4d;border-radius:20px}
.redesign button:hover{background:#18603c}
.redesign button.ghost{background:transparent;color:#c9f2dc;border:1px solid #3d6b53;width:100%}
.redesign .panel{background:#fff;border:1px solid #e2e2d8;border-radius:14px;padding:18px 20px;margin-bottom:14px}
.redesign .panel>h2:first-child{margin-top:0}
.redesign .entry{border-bottom:1px solid #e9e9df;padding:12px 0}
.redesign .entry-meta{font-size:13px;color:#6a6d66}
.redesign .button{background:#e3f4ea;color:#1f7a4d;border-radius:20px}
.redesign .tile[aria-pressed=true]{border-color:#1f7a4d;background:#e3f4ea}
`;
