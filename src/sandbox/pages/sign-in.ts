import { alert, csrfField, html, raw, type SafeHtml } from "../html.js";
import { maskEmail, phoneEnding } from "../challenges.js";
import type { PendingSignIn } from "../sessions.js";
import type { Skin } from "../skin.js";
import type { User } from "../state.js";

/** The visible texts of sign-in and its challenges (docs/sandbox.md quotes them). */
export const SIGN_IN_TEXT = {
  missingFields: "Enter your username and password.",
  unknownUser: "We couldn't find an account with that username.",
  wrongPassword: "The password you entered is incorrect.",
  wrongCode: "That code didn't work. Check the code and try again.",
  wrongAnswer: "That answer doesn't match our records.",
  expiredCode: "That code has expired. Send a new code and try again.",
  tooManyCodes: "Too many incorrect codes. Sign in again.",
  tooManyAnswers: "Too many incorrect answers. Sign in again.",
  attemptExpired: "Your sign-in attempt expired. Sign in again.",
  codeResent: "We sent you a new code.",
  linkResent: "We sent you a new link.",
  notApproved: "We haven't received your approval yet. Approve the sign-in on your other device, then try again.",
  wrongTiles: "Those weren't the right tiles. Try again.",
  signedOut: "You've signed out.",
} as const;

/** The pages a mailed sign-in link shows when it does not sign in (docs/sandbox.md quotes them). */
export const SIGN_IN_LINK_TEXT = {
  expired: {
    heading: "This sign-in link has expired",
    text: "Sign-in links work once and expire after 10 minutes. Sign in again to get a new one.",
  },
  elsewhere: {
    heading: "Open this link in the browser you signed in from",
    text: "This sign-in link finishes a sign-in started in another browser. Open it there, or sign in here to get a link of your own.",
  },
} as const;

export function signInLinkRefusedBody(skin: Skin, reason: keyof typeof SIGN_IN_LINK_TEXT): SafeHtml {
  const text = SIGN_IN_LINK_TEXT[reason];
  return html`<section class="card panel narrow">
    <h1>${text.heading}</h1>
    <p>${text.text}</p>
    <p><a href="${skin.paths.signIn}">${skin.text.signInButton}</a></p>
  </section>`;
}

export interface SignInView { skin: Skin; csrf: string; error?: string; username?: string; next?: string }

export function signInBody(view: SignInView): SafeHtml {
  const { skin } = view;
  const names = skin.signInFields;
  return html`<section class="card panel narrow">
    <h1>${skin.text.signInHeading}</h1>
    ${alert(view.error)}
    <form method="post" action="${skin.paths.signIn}">
      ${csrfField(view.csrf)}
      ${view.next ? html`<input type="hidden" name="next" value="${view.next}">` : ""}
      <label for="${names.username}">${skin.text.username}</label>
      <input type="text" id="${names.username}" name="${names.username}" autocomplete="username" autocapitalize="none" value="${view.username ?? ""}">
      <label for="${names.password}">${skin.text.password}</label>
      <input type="password" id="${names.password}" name="${names.password}" autocomplete="current-password">
      <div class="actions"><button type="submit">${skin.text.signInButton}</button></div>
    </form>
  </section>`;
}

export interface ChallengeView { skin: Skin; csrf: string; user: User; pending: PendingSignIn; error?: string; notice?: string }

/** Heading and first sentence of each challenge page. */
export function challengeIntro(user: User, pending: PendingSignIn): { heading: string; intro: string } {
  switch (pending.kind) {
    case "totp":
      return { heading: "Two-factor authentication", intro: "Enter the 6-digit code from your authenticator app." };
    case "email":
      return { heading: "Check your email", intro: `We emailed a code to ${maskEmail(user.email)}. Enter it below to finish signing in.` };
    case "sms":
      return { heading: "Check your phone", intro: `We texted a code to your phone ending in ${phoneEnding(user.phone)}. Enter it below to finish signing in.` };
    case "device":
      return { heading: "Check your other device", intro: "We sent a sign-in request to your other device. Approve it there to continue." };
    case "captcha":
      return { heading: "Let's make sure you're a person", intro: `Select all tiles showing a ${pending.captcha?.word ?? ""}` };
    case "question":
      return { heading: "Answer your security question", intro: user.security?.question ?? "" };
    case "magic_link":
      return { heading: "Check your email for a sign-in link", intro: `We sent a sign-in link to ${maskEmail(user.email)}. Open it to continue.` };
    case "checkpoint":
      return { heading: "Your account has been restricted", intro: "We restricted your account. We noticed activity on it that doesn't follow our rules, so you can't use Sandbox Social for now." };
  }
}

function rememberBox(skin: Skin): SafeHtml {
  return html`<label class="check" for="remember"><input type="checkbox" id="remember" name="remember" value="1"> ${skin.text.remember}</label>`;
}

function codeForm(view: ChallengeView): SafeHtml {
  const { skin } = view;
  const resend = view.pending.kind === "totp" ? html`` : html`
    <form method="post" action="${skin.paths.challenge}/resend" class="actions">
      ${csrfField(view.csrf)}<span class="muted">Didn't get it?</span>
      <button type="submit" class="secondary">${skin.text.resendButton}</button>
    </form>`;
  return html`<form method="post" action="${skin.paths.challenge}">
      ${csrfField(view.csrf)}
      <label for="code">${skin.text.code}</label>
      <input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="12">
      ${rememberBox(skin)}
      <div class="actions"><button type="submit">${skin.text.verifyButton}</button></div>
    </form>${resend}`;
}

function questionForm(view: ChallengeView): SafeHtml {
  const { skin } = view;
  return html`<form method="post" action="${skin.paths.challenge}">
      ${csrfField(view.csrf)}
      <label for="answer">${skin.text.answer}</label>
      <input type="text" id="answer" name="answer" autocomplete="off" maxlength="200">
      ${rememberBox(skin)}
      <div class="actions"><button type="submit">${skin.text.verifyButton}</button></div>
    </form>`;
}

// Polls the sign-in status and submits the form (with the checkbox) once the other device approved.
const DEVICE_SCRIPT = `(function(){var f=document.getElementById('device-form');var busy=false;
setInterval(function(){if(busy)return;fetch(f.action+'/status',{credentials:'same-origin',cache:'no-store'})
.then(function(r){return r.json()}).then(function(s){if(s.approved&&!busy){busy=true;f.submit()}else if(s.expired){location.reload()}})
.catch(function(){})},1500)})();`;

function deviceForm(view: ChallengeView): SafeHtml {
  const { skin } = view;
  return html`<div class="spinner" aria-hidden="true"></div>
    <p class="muted" role="status">Waiting for approval…</p>
    <form method="post" action="${skin.paths.challenge}" id="device-form">
      ${csrfField(view.csrf)}
      ${rememberBox(skin)}
      <div class="actions"><button type="submit">${skin.text.deviceContinueButton}</button></div>
    </form>
    <noscript><meta http-equiv="refresh" content="2"></noscript>
    <script>${raw(DEVICE_SCRIPT)}</script>`;
}

// Ticking "remember this device" is saved at once: the answer is a link opened later, not this form.
const LINK_SCRIPT = `(function(){var f=document.getElementById('link-form');var box=document.getElementById('remember');
box.addEventListener('change',function(){fetch(f.action,{method:'POST',credentials:'same-origin',body:new URLSearchParams(new FormData(f))}).catch(function(){})})})();`;

function linkForm(view: ChallengeView): SafeHtml {
  const { skin } = view;
  return html`<p class="muted">The link works once, in this browser, for 10 minutes.</p>
    <form method="post" action="${skin.paths.challenge}" id="link-form">
      ${csrfField(view.csrf)}
      ${rememberBox(skin)}
      <noscript><div class="actions"><button type="submit" class="secondary">Save</button></div></noscript>
    </form>
    <form method="post" action="${skin.paths.challenge}/resend" class="actions">
      ${csrfField(view.csrf)}<span class="muted">Didn't get it?</span>
      <button type="submit" class="secondary">${skin.text.resendLinkButton}</button>
    </form>
    <script>${raw(LINK_SCRIPT)}</script>`;
}

// Clicking a tile toggles it; the form carries the ids of the selected tiles.
const CAPTCHA_SCRIPT = `(function(){var input=document.getElementById('tiles');var picked=[];
document.querySelectorAll('button.tile').forEach(function(t){t.addEventListener('click',function(){
var id=t.getAttribute('data-tile');var i=picked.indexOf(id);if(i>=0){picked.splice(i,1)}else{picked.push(id)}
t.setAttribute('aria-pressed',i>=0?'false':'true');input.value=picked.join(',')})})})();`;

function captchaForm(view: ChallengeView): SafeHtml {
  const { skin } = view;
  const tiles = (view.pending.captcha?.tiles ?? []).map((tile) => html`
      <button type="button" class="tile" aria-pressed="false" aria-label="${tile.word}" data-tile="${tile.id}"><span class="symbol" aria-hidden="true">${tile.symbol}</span><span class="word" aria-hidden="true">${tile.word}</span></button>`);
  return html`<p class="muted">Select each matching tile, then select ${skin.text.captchaVerifyButton}.</p>
    <form method="post" action="${skin.paths.challenge}">
      ${csrfField(view.csrf)}
      <input type="hidden" name="tiles" id="tiles" value="">
      <div class="grid" role="group" aria-label="Puzzle tiles">${tiles}</div>
      ${rememberBox(skin)}
      <div class="actions"><button type="submit">${skin.text.captchaVerifyButton}</button></div>
    </form>
    <script>${raw(CAPTCHA_SCRIPT)}</script>`;
}

function checkpointBody(view: ChallengeView): SafeHtml {
  return html`<p>To get your account back, contact our support team and confirm your identity. Until then, signing in again won't help.</p>
    <p><a href="${view.skin.paths.signIn}">Back to sign in</a></p>`;
}

export function challengeBody(view: ChallengeView): SafeHtml {
  const { heading, intro } = challengeIntro(view.user, view.pending);
  const kind = view.pending.kind;
  const form = kind === "device" ? deviceForm(view)
    : kind === "captcha" ? captchaForm(view)
    : kind === "question" ? questionForm(view)
    : kind === "checkpoint" ? checkpointBody(view)
    : kind === "magic_link" ? linkForm(view)
    : codeForm(view);
  const word = view.pending.captcha?.word;
  const introLine = kind === "captcha" && word
    ? html`<p class="prompt">Select all tiles showing a <strong>${word}</strong></p>`
    : html`<p>${intro}</p>`;
  return html`<section class="card panel narrow challenge">
    <h1>${heading}</h1>
    ${introLine}
    ${alert(view.error)}
    ${view.notice ? html`<p class="alert notice" role="status">${view.notice}</p>` : ""}
    ${form}
  </section>`;
}
