/** The inbox (DESIGN §15): each account's messages, and the challenges they answer. Its listeners are `src/inbox/`. */
export { Inbox, PushMessageInput, MAX_MESSAGE_CHARS, type InboxAddresses, type InboxOptions, type ListedMessage, type PushMessage } from "./inbox.js";
