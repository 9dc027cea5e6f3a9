import type { Tool } from "../tool.js";
import { accountTools } from "./accounts.js";
import { actionTools } from "./actions.js";
import { referenceTools } from "./reference.js";
import { routineTools } from "./routines.js";

/** Every MCP tool; the adapter registers exactly these. */
export const TOOLS: readonly Tool[] = [...actionTools, ...accountTools, ...referenceTools, ...routineTools];
