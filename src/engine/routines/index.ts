export * from "./routines.js";
export { routineRunOf } from "./run-of.js";
