/** How the public sees actions and accounts: their JSON, their live links and what to do next. */
export { liveUrl, presentAccount, presentAction, signInUrl, type PublicAccount, type PublicAction } from "./public-json.js";
export { nextStep, type Surface } from "./next-step.js";
