import { describe, expect, it } from "vitest";
import { findInMessage } from "../../src/domain/inbox.js";

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
