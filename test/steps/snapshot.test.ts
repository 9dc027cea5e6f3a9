import { expect, it } from "vitest";
import { bounded, redactor, REDACTED, withoutFieldValues } from "../../src/platforms/steps/index.js";

// What a failed step's snapshot may carry (DESIGN §6): never a field's value, never a typed value or
// a secret wherever the page repeats it, and never more than its cap.

it("takes every field's value out, keeping the field, its name and its state", () => {
  const snapshot = ['- textbox "Password": hunter2', '- textbox "Bio" [disabled]: "line one line two"', "- searchbox: alice", '- textbox "Empty"', '- button "Save"', "- paragraph: hunter2 stays here"].join("\n");
  expect(withoutFieldValues(snapshot).split("\n")).toEqual([
    `- textbox "Password": ${REDACTED}`,
    `- textbox "Bio" [disabled]: ${REDACTED}`,
    `- searchbox: ${REDACTED}`,
    '- textbox "Empty"',
    '- button "Save"',
    "- paragraph: hunter2 stays here",
  ]);
});

it("takes typed values and secrets out wherever the page shows them, as written and as the snapshot quotes them", () => {
  const redact = redactor(["my secret bio", 'say "hi"', "hunter2", "ab", undefined]);
  const snapshot = ['- paragraph: Bio: my secret bio', '- heading "Preview of say \\"hi\\"" [level=2]', "- text: hunter2", "- text: ab cd"].join("\n");
  expect(redact(snapshot).split("\n")).toEqual([`- paragraph: Bio: ${REDACTED}`, `- heading "Preview of ${REDACTED}" [level=2]`, `- text: ${REDACTED}`, "- text: ab cd"]);
});

it("cuts a snapshot over its cap at a line, and says how much was left out", () => {
  const lines = Array.from({ length: 2_000 }, (_, index) => `- listitem: item number ${index}`);
  const cut = bounded(lines.join("\n"), 8 * 1024);
  expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(8 * 1024);
  const kept = cut.split("\n");
  expect(kept.slice(0, -1)).toEqual(lines.slice(0, kept.length - 1));
  expect(kept.at(-1)).toBe(`- … (cut at 8 KB: ${lines.length - (kept.length - 1)} more lines)`);
  expect(bounded("- button \"Save\"")).toBe("- button \"Save\"");
});
