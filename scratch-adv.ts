import { findInMessage } from "./src/domain/inbox.js";
const P = { code: /\bSandbox Social (?:sign-in )?code is (\d{6})\b/, link: /(https?:\/\/[^\s/"'<>]+\/sign-in\/link\/[A-Za-z0-9_-]{22,})/ };
const cases = {
  dash: "code " + "a-".repeat(10_000),
  brackets: "code " + "[".repeat(20_000),
  words: "code 1234 ".repeat(2_000),
  href: "code " + "https://".repeat(2500),
  digits: "code " + "1".repeat(20_000),
  mixed: ("verification a1-".repeat(1300)),
  plain: "Your Sandbox Social code is 123456. ".repeat(500),
};
for (let round = 0; round < 3; round++) for (const [name, text] of Object.entries(cases)) {
  for (const p of [P, undefined]) {
  const t = performance.now();
  findInMessage(text.slice(0, 20000), p);
  if (round === 2) console.log(name, p ? "driver" : "generic", (performance.now() - t).toFixed(1), "ms");
  }
}
