/** Types of faketime.mjs, for the tests that run a process with its clock off (test/helpers/fake-time.ts). */
export function fakeTimeLibrary(): string | undefined;
export function installFakeTime(): void;
