import type { Hono } from "hono";
import { errorPage, fields, onlyIn, rateLimited, renderPage, requireViewer, type SandboxDeps, type SandboxEnv } from "../http.js";
import { personBody } from "../pages/people.js";
import { BIO_MAX_LENGTH, PROFILE_PATH, PROFILE_WORDING, profileBody } from "../pages/profile.js";
import { SKINS } from "../skin.js";

/** Person pages by handle, for both skins (a view counts toward the rate limit), and the viewer's own profile form. */
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

  const wording = () => PROFILE_WORDING[deps.state.settings.profileReworded ? "reworded" : "original"];

  app.get(PROFILE_PATH, (c) => {
    const viewer = requireViewer(c);
    if (viewer instanceof Response) return viewer;
    return renderPage(c, wording().heading, profileBody(c.var.skin, wording(), { csrf: c.var.session.csrf, viewer }));
  });

  // Saving counts toward the rate limit, as any change the person makes.
  app.post(PROFILE_PATH, (c) => {
    const viewer = requireViewer(c);
    if (viewer instanceof Response) return viewer;
    const form = fields(c, "bio");
    if (!form) return errorPage(c, 400);
    const limited = rateLimited(c, deps, viewer);
    if (limited) return limited;
    const bio = form.bio.trim();
    if (bio.length > BIO_MAX_LENGTH) {
      const error = `Your bio is too long (at most ${BIO_MAX_LENGTH} characters).`;
      return renderPage(c, wording().heading, profileBody(c.var.skin, wording(), { csrf: c.var.session.csrf, viewer, error, draft: form.bio }), 422);
    }
    viewer.bio = bio;
    c.var.session.flash = { tone: "notice", text: wording().saved };
    return c.redirect(`${c.var.skin.paths.people}/${viewer.handle}`, 303);
  });
}
