/**
 * The two looks of the sandbox site. The "redesign" switch changes routes, labels, button
 * names and markup at once, the way a real site changes under a driver written for the old one.
 * Explanatory sentences and error messages stay the same in both skins (see docs/sandbox.md).
 */
export type SkinName = "classic" | "redesign";

/** Paths and visible labels of one look of the site. */
export interface Skin {
  name: SkinName;
  paths: {
    home: string;
    signIn: string;
    challenge: string;
    signOut: string;
    /** POST here creates a post; `${posts}/:id` is the permalink. */
    posts: string;
    /** `${people}/:handle` is a person page. */
    people: string;
    /** The conversation list; `${messages}/:id` a conversation, `${messages}/new` a new one. */
    messages: string;
  };
  /** Names of the sign-in form's fields (they change with the redesign too). */
  signInFields: { username: string; password: string };
  text: {
    brand: string;
    signInHeading: string;
    username: string;
    password: string;
    signInButton: string;
    code: string;
    /** The answer field of the security-question challenge. */
    answer: string;
    verifyButton: string;
    resendButton: string;
    /** Sends a new sign-in link (the `magic_link` challenge). */
    resendLinkButton: string;
    remember: string;
    deviceContinueButton: string;
    captchaVerifyButton: string;
    homeHeading: string;
    composer: string;
    postButton: string;
    postCreated: string;
    postHeading: string;
    personPosts: string;
    navHome: string;
    navMessages: string;
    navProfile: string;
    signOutButton: string;
    messagesHeading: string;
    newMessageLink: string;
    newMessageHeading: string;
    to: string;
    message: string;
    sendButton: string;
    messageButton: string;
  };
}

export const CLASSIC: Skin = {
  name: "classic",
  paths: {
    home: "/feed",
    signIn: "/login",
    challenge: "/login/challenge",
    signOut: "/logout",
    posts: "/posts",
    people: "/people",
    messages: "/messages",
  },
  signInFields: { username: "username", password: "password" },
  text: {
    brand: "Sandbox Social",
    signInHeading: "Sign in to Sandbox Social",
    username: "Username",
    password: "Password",
    signInButton: "Sign in",
    code: "Security code",
    answer: "Your answer",
    verifyButton: "Verify",
    resendButton: "Send a new code",
    resendLinkButton: "Send a new link",
    remember: "Remember this device",
    deviceContinueButton: "I approved it",
    captchaVerifyButton: "Verify",
    homeHeading: "Feed",
    composer: "What's on your mind?",
    postButton: "Post",
    postCreated: "Your post is live.",
    postHeading: "Post by",
    personPosts: "Posts",
    navHome: "Feed",
    navMessages: "Messages",
    navProfile: "Profile",
    signOutButton: "Sign out",
    messagesHeading: "Messages",
    newMessageLink: "New message",
    newMessageHeading: "New message",
    to: "To",
    message: "Write a message",
    sendButton: "Send",
    messageButton: "Message",
  },
};

export const REDESIGN: Skin = {
  name: "redesign",
  paths: {
    home: "/home",
    signIn: "/account/signin",
    challenge: "/account/verify",
    signOut: "/account/signout",
    posts: "/p",
    people: "/u",
    messages: "/inbox",
  },
  signInFields: { username: "identifier", password: "passcode" },
  text: {
    brand: "sandbox social",
    signInHeading: "Welcome back",
    username: "Email or username",
    password: "Passcode",
    signInButton: "Continue",
    code: "Verification code",
    answer: "Security answer",
    verifyButton: "Confirm",
    resendButton: "Resend code",
    resendLinkButton: "Resend link",
    remember: "Trust this browser",
    deviceContinueButton: "Done, continue",
    captchaVerifyButton: "Submit",
    homeHeading: "Home",
    composer: "Share an update",
    postButton: "Publish",
    postCreated: "Update published.",
    postHeading: "Update from",
    personPosts: "Recent updates",
    navHome: "Home",
    navMessages: "Inbox",
    navProfile: "Me",
    signOutButton: "Log out",
    messagesHeading: "Inbox",
    newMessageLink: "Start a conversation",
    newMessageHeading: "New conversation",
    to: "Recipient",
    message: "Reply",
    sendButton: "Send reply",
    messageButton: "Send message",
  },
};

/** Where a mailed one-time sign-in link points (`${SIGN_IN_LINK_PATH}/<token>`), the same in both skins. */
export const SIGN_IN_LINK_PATH = "/sign-in/link";

export const SKINS: readonly Skin[] = [CLASSIC, REDESIGN];

export function skinFor(redesign: boolean): Skin {
  return redesign ? REDESIGN : CLASSIC;
}

export function postPath(skin: Skin, id: string): string {
  return `${skin.paths.posts}/${encodeURIComponent(id)}`;
}

export function personPath(skin: Skin, handle: string): string {
  return `${skin.paths.people}/${encodeURIComponent(handle)}`;
}

export function conversationPath(skin: Skin, id: string): string {
  return `${skin.paths.messages}/${encodeURIComponent(id)}`;
}

export function newMessagePath(skin: Skin, to?: string): string {
  const base = `${skin.paths.messages}/new`;
  return to === undefined ? base : `${base}?to=${encodeURIComponent(to)}`;
}
