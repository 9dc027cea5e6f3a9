import { describe, expect, it } from "vitest";
import { cooldownMs, describePace, effectivePaces, mergeOverrides, paceWait } from "../../src/domain/pace.js";

const now = new Date("2026-11-21T12:00:00.000Z");
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
const at = (minutesAhead: number) => new Date(now.getTime() + minutesAhead * 60_000);
const noJitter = () => 0;

describe("pace", () => {
  it("counts starts in any rolling hour and day, and the gap since the last start", () => {
    expect(paceWait({ per_hour: 2 }, [ago(50), ago(10)], now, noJitter)).toEqual(at(10));
    expect(paceWait({ per_hour: 2 }, [ago(70), ago(10)], now, noJitter)).toBeUndefined();
    expect(paceWait({ per_day: 3 }, [ago(23 * 60), ago(60), ago(1)], now, noJitter)).toEqual(at(60));
    expect(paceWait({ min_gap_seconds: 300 }, [ago(2)], now, noJitter)).toEqual(at(3));
    // The strictest rule decides.
    expect(paceWait({ per_hour: 10, min_gap_seconds: 300 }, [ago(30), ago(1)], now, noJitter)).toEqual(at(4));
    expect(paceWait(undefined, [ago(1)], now, noJitter)).toBeUndefined();
  });

  it("adds up to 20 % of the wait as jitter, never less than the wait", () => {
    expect(paceWait({ per_hour: 1 }, [ago(30)], now, () => 0.999_999)!.getTime()).toBe(at(36).getTime());
    expect(paceWait({ per_hour: 1 }, [ago(30)], now, () => 0.25)).toEqual(at(31.5));
  });

  it("overrides replace defaults field by field; null drops an override", () => {
    const stored = mergeOverrides({}, { post: { per_hour: 2, min_gap_seconds: 5 } });
    expect(effectivePaces({ post: { per_hour: 600, per_day: 5000 } }, stored)).toEqual({ post: { per_hour: 2, per_day: 5000, min_gap_seconds: 5 } });
    expect(mergeOverrides(stored, { post: { per_hour: null, min_gap_seconds: null } })).toEqual({});
  });

  it("cools down 15 min doubling per strike, at most a day", () => {
    expect([1, 2, 3, 10].map(cooldownMs)).toEqual([15 * 60_000, 30 * 60_000, 60 * 60_000, 24 * 3_600_000]);
  });

  it("reads as words", () => {
    expect(describePace("post", { per_hour: 2 })).toBe("2 posts an hour");
    expect(describePace("send_message", { per_day: 1, min_gap_seconds: 30 })).toBe("1 message a day, 30 s between messages");
  });
});
