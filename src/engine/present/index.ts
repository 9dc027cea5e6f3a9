/** How the public sees actions and accounts: their JSON, their live links and what to do next. */
export { liveUrl, presentAccount, presentAction, presentMessage, signInUrl, type PublicAccount, type PublicAction, type PublicMessage } from "./public-json.js";
export { nextStep, type PacingView, type Surface } from "./next-step.js";
