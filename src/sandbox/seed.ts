import type { ChallengeKind, SandboxState } from "./state.js";

export const SEED_PASSWORD = "sandbox-password";
export const BOB_TOTP_SECRET = "JBSWY3DPEHPK3PXP";

const PEOPLE: ReadonlyArray<{ handle: string; name: string; headline: string; challenge: ChallengeKind; messaging?: boolean }> = [
  { handle: "alice", name: "Alice Johnson", headline: "Product designer at Northwind · sketching in the margins", challenge: "none" },
  { handle: "bob", name: "Bob Martinez", headline: "Backend engineer · coffee, queues and long bike rides", challenge: "totp" },
  { handle: "carol", name: "Carol Nguyen", headline: "Community manager for the Riverside makers' club", challenge: "email" },
  { handle: "dave", name: "Dave Okafor", headline: "Freelance photographer · street and weddings", challenge: "sms" },
  { handle: "erin", name: "Erin Schmidt", headline: "Data scientist · maps, models and mountains", challenge: "device" },
  { handle: "frank", name: "Frank Rossi", headline: "Chef at Trattoria Frank · fresh pasta daily", challenge: "captcha" },
  { handle: "grace", name: "Grace Kim", headline: "Marketing lead · runner · dog person", challenge: "checkpoint" },
  // Asked "What was the name of your first pet?" (answer "biscuit").
  { handle: "heidi", name: "Heidi Larsen", headline: "Librarian · board games and bad puns", challenge: "question" },
  // No direct messages on this account: every messages page says so.
  { handle: "ivan", name: "Ivan Petrov", headline: "Carpenter · oak, walnut and patience", challenge: "none", messaging: false },
];

const POSTS: ReadonlyArray<{ author: string; text: string; minutesAgo: number }> = [
  { author: "carol", text: "Riverside makers' meetup is on Thursday at 7 pm. Bring something you're building!", minutesAgo: 2900 },
  { author: "dave", text: "Golden hour over the harbour today. Some evenings the light does all the work.", minutesAgo: 1500 },
  { author: "frank", text: "New on the menu this week: pumpkin ravioli with brown butter and sage.", minutesAgo: 800 },
  { author: "bob", text: "Shipped the new job queue. Zero lost jobs in the first million. Coffee time.", minutesAgo: 300 },
  { author: "erin", text: "Anyone have a favourite book on spatial statistics? Asking for a side project.", minutesAgo: 120 },
  { author: "alice", text: "Finished the new onboarding sketches. Feedback welcome before Friday!", minutesAgo: 45 },
];

const CONVERSATIONS: ReadonlyArray<ReadonlyArray<{ from: string; to: string; text: string; minutesAgo: number }>> = [
  [
    { from: "alice", to: "bob", text: "Hi Bob! Do you have a minute to look at the API sketches?", minutesAgo: 240 },
    { from: "bob", to: "alice", text: "Sure, send them over. I'm free after lunch.", minutesAgo: 230 },
    { from: "alice", to: "bob", text: "Great, they're in the shared folder. Thanks!", minutesAgo: 225 },
  ],
  [
    { from: "carol", to: "alice", text: "Are you coming to the meetup on Thursday?", minutesAgo: 600 },
    { from: "alice", to: "carol", text: "Wouldn't miss it. I'll bring the prototype.", minutesAgo: 590 },
  ],
  [
    { from: "carol", to: "dave", text: "Could you take photos at the meetup? We'd cover your coffee.", minutesAgo: 1400 },
    { from: "dave", to: "carol", text: "Happy to. I'll be there around 6:45.", minutesAgo: 1380 },
  ],
  [
    { from: "erin", to: "frank", text: "Is the pumpkin ravioli on the menu all week?", minutesAgo: 700 },
    { from: "frank", to: "erin", text: "Until Sunday, or until we run out of pumpkins!", minutesAgo: 650 },
  ],
];

/** Fills a fresh sandbox: the users of DESIGN §9, a few posts, and conversations between them. */
export function seedSandbox(state: SandboxState): void {
  for (const person of PEOPLE) {
    state.addUser({
      ...person,
      password: SEED_PASSWORD,
      ...(person.challenge === "totp" ? { totpSecret: BOB_TOTP_SECRET } : {}),
    });
  }
  const now = state.clock().getTime();
  const ago = (minutes: number) => new Date(now - minutes * 60_000);
  for (const post of POSTS) state.createPost(post.author, post.text, ago(post.minutesAgo));
  for (const conversation of CONVERSATIONS) {
    for (const message of conversation) state.sendMessage(message.from, message.to, message.text, ago(message.minutesAgo));
  }
}
