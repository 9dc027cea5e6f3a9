/**
 * `action-service/driver`: what a platform driver is written with (docs/drivers.md). The built-in
 * drivers use it too; nothing here reaches into the service's engine, store or surfaces. Versioned
 * by `DRIVER_API_VERSION`: a minor version only adds; a driver for another major version is
 * refused at start-up.
 */
import { defineDriver as define, type DriverDeclaration } from "./platforms/define-driver.js";
import type { Driver } from "./platforms/driver.js";

export { DRIVER_API_VERSION } from "./platforms/api-version.js";
export type { ActionHandler, Driver, DriverContext, FailureDetector, SessionProbe } from "./platforms/driver.js";
export type { ChallengePage, SignInSpec } from "./platforms/sign-in.js";
export type { PlatformInfo } from "./engine/execution/index.js";
export { ACTION_PARAMS, ACTION_TYPES, type ActionParams, type ActionType, type BrowserStep } from "./domain/actions.js";
export { ACTION_ERRORS, ACTION_ERROR_CODES, ActionFailure, type ActionErrorCode } from "./domain/errors.js";
export { CHALLENGE_KINDS, type ChallengeKind } from "./domain/challenges.js";
export type { MessagePatterns } from "./domain/inbox.js";
export type { Pace, Paces } from "./domain/pace.js";
/** The zod a driver's own params schemas are written with: the service's, so its API reference can show them. */
export { z } from "zod";
export type { APIResponse, Locator, Page } from "playwright";

/** What a driver declares, with the driver API version it was written for (`DRIVER_API_VERSION` when you write it). */
export type DriverDefinition = DriverDeclaration & { apiVersion: string };

/**
 * A driver from its declarations: the platform, its failure detectors, its sign-in (a `SignInSpec`,
 * run by the shared sign-in loop), who is signed in, and one handler per action type.
 */
export function defineDriver(definition: DriverDefinition): Driver {
  return define(definition);
}
