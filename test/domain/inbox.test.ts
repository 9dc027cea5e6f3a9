import { describe, expect, it } from "vitest";
import { findInMessage, linearPattern } from "../../src/domain/inbox.js";
import { DRIVERS } from "../../src/platforms/index.js";

describe("finding the code in a message", () => {
  it("the generic rule: a 4–10 character code beside a word such as code, verification or PIN", () => {
    expect(findInMessage("Your verification code is 482913. It expires in 10 minutes.", undefined)).toEqual({ code: "482913" });
    expect(findInMessage("Use PIN 7731 to sign in", undefined)).toEqual({ code: "7731" });
    expect(findInMessage("Your one-time code: AB12-CD34", undefined)).toEqual({ code: "AB12CD34" });
    expect(findInMessage("Sign-in code\n\nG-58213\n\nIf this wasn't you, ignore this mail.", undefined)).toEqual({ code: "G58213" });
  });

  it("nothing where no word of a code stands near, nor a plain word or a short number", () => {
    expect(findInMessage("Welcome! Your order 123456 has shipped.", undefined)).toBeUndefined();
    expect(findInMessage("Your code expires in 10 minutes", undefined)).toBeUndefined();
    expect(findInMessage("Enter the verification word banana", undefined)).toBeUndefined();
  });

  it("the nearest code to the word wins over other numbers in the message", () => {
    expect(findInMessage("© 2026 Example Inc. — 1 Main St, Springfield 12345\nYour login code is 905117", undefined)).toEqual({ code: "905117" });
  });

  it("a driver's patterns come first: a link before a code, the first capture group", () => {
    const patterns = { code: /(\d{6}) is your Ghost sign in verification code/, link: /(https:\/\/example\.com\/magic\/\S+)/ };
    expect(findInMessage("123456 is your Ghost sign in verification code", patterns)).toEqual({ code: "123456" });
    expect(findInMessage("Sign in: https://example.com/magic/abc123 (code 999999)", patterns)).toEqual({ link: "https://example.com/magic/abc123" });
    // Neither pattern matches: the generic rule.
    expect(findInMessage("Your verification code is 246810", patterns)).toEqual({ code: "246810" });
  });
});

describe("patterns read in linear time", () => {
  it("every driver's message patterns run on the linear-time engine", () => {
    const patterns = DRIVERS.flatMap((driver) => [driver.platform.inbox?.code, driver.platform.inbox?.link]).filter((pattern) => pattern !== undefined);
    expect(patterns.length).toBeGreaterThanOrEqual(3);
    for (const pattern of patterns) expect(() => linearPattern(pattern)).not.toThrow();
  });

  it("a pattern that needs backtracking (look-ahead, back-reference) is refused with a message saying why", () => {
    expect(() => findInMessage("code 123456", { code: /(?=\d)(\d{6})/ })).toThrow(/cannot run in linear time/);
    expect(() => findInMessage("code 1212", { code: /(\d\d)\1/ })).toThrow(/no look-around and no back-references/);
  });

  it("a driver's pattern keeps its flags: case, first capture group", () => {
    expect(findInMessage("YOUR SANDBOX CODE IS 123456", { code: /sandbox code is (\d{6})/i })).toEqual({ code: "123456" });
    expect(findInMessage("SANDBOX NUMBER IS 123456", { code: /sandbox number is (\d{6})/i })).toEqual({ code: "123456" });
    expect(findInMessage("SANDBOX NUMBER IS 123456", { code: /sandbox number is (\d{6})/ })).toBeUndefined();
  });

  it("a code must hold a digit itself: a word followed by digits further along its hyphen run is not a code", () => {
    expect(findInMessage("Your code: abcd-efgh-1234-5678", undefined)).toEqual({ code: "12345678" });
  });
});
