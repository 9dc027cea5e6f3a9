import type { Hono } from "hono";
import { errorPage, fields, onlyIn, rateLimited, renderPage, requireViewer, type SandboxDeps, type SandboxEnv } from "../http.js";
import { POST_REFUSALS, feedBody, postBody } from "../pages/feed.js";
import { SKINS, postPath } from "../skin.js";

const FEED_SIZE = 50;

/** The feed with its composer, and post permalinks, for both skins. */
export function registerFeedRoutes(app: Hono<SandboxEnv>, deps: SandboxDeps): void {
  const authorOf = (handle: string) => deps.state.users.get(handle);

  app.get("/", (c) => c.redirect(c.var.viewer ? c.var.skin.paths.home : c.var.skin.paths.signIn, 302));

  for (const skin of SKINS) {
    const guard = onlyIn(skin);

    app.get(skin.paths.home, guard, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const posts = deps.state.listPosts(undefined, FEED_SIZE);
      return renderPage(c, skin.text.homeHeading, feedBody({ skin, csrf: c.var.session.csrf, posts, authorOf }));
    });

    // Posting counts toward the rate limit (refused posts included: the attempt is the action).
    app.post(skin.paths.posts, guard, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const form = fields(c, "text");
      if (!form) return errorPage(c, 400);
      const limited = rateLimited(c, deps, viewer);
      if (limited) return limited;
      const result = deps.state.createPost(viewer.handle, form.text);
      if (!result.ok) {
        const posts = deps.state.listPosts(undefined, FEED_SIZE);
        const body = feedBody({ skin, csrf: c.var.session.csrf, posts, authorOf, error: POST_REFUSALS[result.reason], draft: form.text });
        return renderPage(c, skin.text.homeHeading, body, 422);
      }
      c.var.session.flash = { tone: "notice", text: skin.text.postCreated };
      return c.redirect(postPath(skin, result.post.id), 303);
    });

    app.get(`${skin.paths.posts}/:id`, guard, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const post = deps.state.findPost(c.req.param("id"));
      if (!post) return errorPage(c, 404);
      const author = authorOf(post.author);
      return renderPage(c, `${skin.text.postHeading} ${author?.name ?? post.author}`, postBody(skin, post, author));
    });
  }
}
