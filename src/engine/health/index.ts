/** Health checks of connected accounts (DESIGN §16). */
export { HealthChecks, type HealthCheckOptions } from "./health-checks.js";
