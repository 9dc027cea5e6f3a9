import type { Hono } from "hono";
import { errorPage, onlyIn, rateLimited, renderPage, requireViewer, type SandboxDeps, type SandboxEnv } from "../http.js";
import { personBody } from "../pages/people.js";
import { SKINS } from "../skin.js";

/** Person pages by handle, for both skins. A view counts toward the rate limit. */
export function registerPeopleRoutes(app: Hono<SandboxEnv>, deps: SandboxDeps): void {
  for (const skin of SKINS) {
    app.get(`${skin.paths.people}/:handle`, onlyIn(skin), (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const limited = rateLimited(c, deps, viewer);
      if (limited) return limited;
      const handle = c.req.param("handle").replace(/^@/, "").toLowerCase();
      const person = deps.state.users.get(handle);
      if (!person) return errorPage(c, 404);
      const posts = deps.state.listPosts(person.handle, 20);
      return renderPage(c, person.name, personBody(skin, person, posts, viewer));
    });
  }
}
