import { alert, csrfField, html, timeTag, type SafeHtml } from "../html.js";
import { personPath, postPath, type Skin } from "../skin.js";
import { POST_MAX_LENGTH, type Post, type User } from "../state.js";

/** Why a post was refused, as the page says it. */
export const POST_REFUSALS = {
  empty: "Your post is empty. Write something first.",
  too_long: `Your post is too long. Posts can be up to ${POST_MAX_LENGTH} characters.`,
  duplicate: "You already posted this.",
} as const;

/** One post in a list: a card in the classic skin, an "entry" row in the redesign. */
export function postCard(skin: Skin, post: Post, author: User | undefined): SafeHtml {
  const name = author?.name ?? post.author;
  if (skin.name === "redesign") {
    return html`<div class="entry" id="entry-${post.id}">
      <div class="entry-meta"><a href="${personPath(skin, post.author)}"><strong>${name}</strong></a> (@${post.author}) — <a href="${postPath(skin, post.id)}">${timeTag(post.createdAt)}</a></div>
      <div class="text">${post.text}</div>
    </div>`;
  }
  return html`<article class="card post" id="post-${post.id}">
    <header><a class="author" href="${personPath(skin, post.author)}">${name}</a><span class="handle">@${post.author}</span><span aria-hidden="true">·</span><a class="permalink" href="${postPath(skin, post.id)}">${timeTag(post.createdAt)}</a></header>
    <p class="text">${post.text}</p>
  </article>`;
}

export interface FeedView {
  skin: Skin;
  csrf: string;
  posts: Post[];
  authorOf: (handle: string) => User | undefined;
  error?: string;
  draft?: string;
}

export function feedBody(view: FeedView): SafeHtml {
  const { skin } = view;
  const composer = html`<form method="post" action="${skin.paths.posts}">
      ${csrfField(view.csrf)}
      <label for="post-text">${skin.text.composer}</label>
      ${alert(view.error)}
      <textarea id="post-text" name="text" rows="3">${view.draft ?? ""}</textarea>
      <div class="actions"><button type="submit">${skin.text.postButton}</button></div>
    </form>`;
  const posts = view.posts.length === 0
    ? html`<p class="muted">Nothing here yet.</p>`
    : view.posts.map((post) => postCard(skin, post, view.authorOf(post.author)));
  if (skin.name === "redesign") {
    return html`<h1>${skin.text.homeHeading}</h1>
      <div class="panel composer">${composer}</div>
      <div class="panel timeline"><h2>Latest</h2>${posts}</div>`;
  }
  return html`<h1>${skin.text.homeHeading}</h1>
    <section class="card composer" aria-label="Create a post">${composer}</section>
    <section aria-label="Posts">${posts}</section>`;
}

export function postBody(skin: Skin, post: Post, author: User | undefined): SafeHtml {
  return html`<h1>${skin.text.postHeading} ${author?.name ?? post.author}</h1>
    ${skin.name === "redesign" ? html`<div class="panel">${postCard(skin, post, author)}</div>` : postCard(skin, post, author)}
    <p><a href="${skin.paths.home}">Back to ${skin.text.navHome.toLowerCase()}</a></p>`;
}
