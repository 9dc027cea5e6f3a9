import { alert, csrfField, html, type SafeHtml } from "../html.js";
import type { Skin } from "../skin.js";
import type { User } from "../state.js";

/** Where a person edits their own profile's bio (a page no built-in action covers: what routines are taught on). */
export const PROFILE_PATH = "/settings/profile";

export const BIO_MAX_LENGTH = 300;

/** The profile form's words: as first built, and after the control API's `profile_reworded` (a redesign of this one page). */
export const PROFILE_WORDING = {
  original: { heading: "Edit your profile", label: "Bio", button: "Save", saved: "Profile saved." },
  reworded: { heading: "Your public profile", label: "About you", button: "Update profile", saved: "Profile updated." },
} as const;

export type ProfileWording = (typeof PROFILE_WORDING)[keyof typeof PROFILE_WORDING];

/** The form: the bio in a labelled textbox and one button. */
export function profileBody(skin: Skin, wording: ProfileWording, view: { csrf: string; viewer: User; error?: string; draft?: string }): SafeHtml {
  const form = html`<form method="post" action="${PROFILE_PATH}">
      ${csrfField(view.csrf)}
      ${alert(view.error)}
      <label for="profile-bio">${wording.label}</label>
      <textarea id="profile-bio" name="bio" rows="3">${view.draft ?? view.viewer.bio}</textarea>
      <div class="actions"><button type="submit">${wording.button}</button></div>
    </form>`;
  return html`<h1>${wording.heading}</h1>
    ${skin.name === "redesign" ? html`<div class="panel">${form}</div>` : html`<section class="card" aria-label="${wording.heading}">${form}</section>`}`;
}
