/** Where time comes from; tests inject their own to move time to a deadline. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
