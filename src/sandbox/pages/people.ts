import { html, type SafeHtml } from "../html.js";
import { newMessagePath, type Skin } from "../skin.js";
import { PROFILE_PATH } from "./profile.js";
import type { Post, User } from "../state.js";
import { postCard } from "./feed.js";

/** A person's page: name (the heading), handle, headline, a way to message them, their posts. */
export function personBody(skin: Skin, person: User, posts: Post[], viewer: User): SafeHtml {
  const initial = [...person.name][0]?.toUpperCase() ?? "?";
  const messageLink = person.handle === viewer.handle
    ? html`<p><a href="${PROFILE_PATH}">Edit profile</a></p>`
    : html`<p><a class="button" href="${newMessagePath(skin, person.handle)}">${skin.text.messageButton}</a></p>`;
  const bio = person.bio === "" ? html`` : html`<p class="bio" aria-label="Bio">${person.bio}</p>`;
  const list = posts.length === 0
    ? html`<p class="muted">No posts yet.</p>`
    : posts.map((post) => postCard(skin, post, person));
  if (skin.name === "redesign") {
    return html`<div class="panel person">
        <h1>${person.name}</h1>
        <p class="handle">@${person.handle}</p>
        <p class="headline">${person.headline}</p>
        ${bio}
        ${messageLink}
      </div>
      <div class="panel"><h2>${skin.text.personPosts}</h2>${list}</div>`;
  }
  return html`<section class="card profile" aria-label="Profile">
      <div class="avatar" aria-hidden="true">${initial}</div>
      <h1>${person.name}</h1>
      <p class="handle">@${person.handle}</p>
      <p class="headline">${person.headline}</p>
      ${bio}
    </section>
    ${messageLink}
    <h2>${skin.text.personPosts}</h2>
    ${list}`;
}
