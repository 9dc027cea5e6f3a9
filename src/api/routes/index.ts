import type { Route } from "../route.js";
import { accountRoutes } from "./accounts.js";
import { actionRoutes } from "./actions.js";
import { creditRoutes } from "./credits.js";
import { eventRoutes } from "./events.js";
import { routineRoutes } from "./routines.js";

/** Every REST route; the adapter and the OpenAPI document both read this list. */
export const ROUTES: readonly Route[] = [...accountRoutes, ...actionRoutes, ...creditRoutes, ...eventRoutes, ...routineRoutes];
