import type { Locator, Page } from "playwright";
import { z } from "zod";
import { ACTION_PARAMS, type ActionType } from "../../domain/actions.js";
import { defineDriver } from "../define-driver.js";
import type { ActionHandler, Driver, FailureDetector, SessionProbe } from "../driver.js";
import type { ChallengePage, SignInSpec } from "../sign-in.js";
import { compileLocator } from "../steps/locators.js";
import { firstGroup, recipeHandler, type Compile } from "./recipe.js";
import type { Locator as LocatorJson, PlatformFile, Recipe } from "./schema.js";

/** A driver from a valid platform file (`parsePlatformFile`): the shared sign-in loop, its detectors, one handler per recipe. */
export function driverOfFile(file: PlatformFile): Driver {
  const compile: Compile = (locator) => compileLocator(locator, file.locators);
  const on = (locator: LocatorJson) => {
    const find = compile(locator);
    return (page: Page) => find(page);
  };
  const failures: FailureDetector[] = file.failures.map((failure) => ({ code: failure.code, locate: on(failure.shows), message: failure.message }));
  const signedInAs = signedInAsOf(file, compile);
  const actions: Partial<Record<ActionType, ActionHandler>> = { connect: connectWith(signedInAs) };
  for (const [type, recipe] of Object.entries(file.actions) as [ActionType, Recipe][]) actions[type] = recipeHandler(recipe, compile, failures, file.locators);
  return defineDriver({
    platform: {
      name: file.name,
      title: file.title,
      description: file.description,
      ...(file.inbox ? { inbox: inboxOf(file.inbox) } : {}),
      ...(file.paces ? { paces: file.paces } : {}),
      ...paramsOf(file.actions),
    },
    failures,
    signIn: signInSpec(file, on),
    signedInAs,
    actions,
    ...(file.blockedHosts ? { blockedHosts: file.blockedHosts } : {}),
    ...(file.whenUnreachable ? { whenUnreachable: file.whenUnreachable } : {}),
  });
}

function signInSpec(file: PlatformFile, on: (locator: LocatorJson) => (page: Page) => Locator): SignInSpec {
  const { signIn } = file;
  return {
    start: file.start,
    ...(file.startTimeoutMs === undefined ? {} : { startTimeoutMs: file.startTimeoutMs }),
    ...(file.probe ? { probe: probeOf(file.probe) } : {}),
    signedIn: on(file.signedIn),
    signedOut: on(file.signedOut),
    form: {
      ...(signIn.path === undefined ? {} : { path: signIn.path }),
      username: on(signIn.username),
      password: on(signIn.password),
      submit: on(signIn.submit),
      ...(signIn.remember ? { remember: on(signIn.remember) } : {}),
    },
    refused: on(signIn.refused),
    ...(signIn.alert ? { alert: on(signIn.alert) } : {}),
    challenges: signIn.challenges.map((challenge): ChallengePage => {
      const words = on(challenge.message ?? challenge.shows);
      return {
        kind: challenge.kind,
        shows: on(challenge.shows),
        ...(challenge.field ? { field: on(challenge.field) } : {}),
        ...(challenge.submit ? { submit: on(challenge.submit) } : {}),
        ...(challenge.link ? { link: true } : {}),
        ...(challenge.refusal ? { refusal: on(challenge.refusal) } : {}),
        ...(challenge.remember ? { remember: on(challenge.remember) } : {}),
        ...(challenge.onForm ? { onForm: true } : {}),
        message: async (page) => (await words(page).first().innerText()).trim(),
      };
    }),
  };
}

/** The signed-in user's handle, read from the page as the file says. */
function signedInAsOf(file: PlatformFile, compile: Compile): (page: Page) => Promise<string | undefined> {
  const { locator, read, pattern } = file.signedInAs;
  const find = compile(locator);
  const keep = pattern === undefined ? (text: string) => text : firstGroup(pattern);
  return async (page) => {
    const element = find(page).first();
    if ((await element.count()) === 0) return undefined;
    const text = read === "text" ? (await element.innerText()).trim() : await element.getAttribute(read.attribute);
    return handleOf(text === null ? undefined : keep(text));
  };
}

function handleOf(text: string | undefined): string | undefined {
  if (!text) return undefined;
  try {
    return decodeURIComponent(text).trim() || undefined;
  } catch {
    return text.trim() || undefined;
  }
}

/** Connect needs no recipe: signed in, the profile is who the page shows. */
function connectWith(signedInAs: (page: Page) => Promise<string | undefined>): ActionHandler {
  return async (context) => {
    const handle = await signedInAs(context.page);
    const profile = handle ? { handle, name: handle } : undefined;
    await context.markConnected(profile);
    return { signed_in: true, ...(profile ? { profile } : {}) };
  };
}

function probeOf(probe: NonNullable<PlatformFile["probe"]>): SessionProbe {
  const find = firstGroup(probe.pattern);
  return { path: probe.path, signedInAs: async (response) => (response.status() === 200 ? handleOf(find(await response.text())) : undefined) };
}

function inboxOf(inbox: NonNullable<PlatformFile["inbox"]>) {
  return {
    ...(inbox.code ? { code: new RegExp(inbox.code) } : {}),
    ...(inbox.link ? { link: new RegExp(inbox.link) } : {}),
    ...(inbox.senders ? { senders: inbox.senders } : {}),
  };
}

/** The params schemas of the action types the file adds params to: the service's own, each member extended. */
function paramsOf(actions: PlatformFile["actions"]): { params?: Partial<Record<ActionType, z.ZodType>> } {
  const params: Partial<Record<ActionType, z.ZodType>> = {};
  for (const [type, recipe] of Object.entries(actions) as [ActionType, Recipe][]) {
    if (!recipe.params || Object.keys(recipe.params).length === 0) continue;
    const extra = Object.fromEntries(
      Object.entries(recipe.params).map(([name, param]) => {
        let value = z.string().trim().min(1).max(param.maxLength ?? 1_000);
        if (param.pattern) {
          const matches = firstGroup(param.pattern);
          value = value.refine((text) => matches(text) !== undefined, `must match ${param.pattern}`) as unknown as typeof value;
        }
        const described = value.describe(param.description);
        return [name, param.required ? described : described.optional()];
      }),
    );
    params[type] = extend(ACTION_PARAMS[type], extra).describe(ACTION_PARAMS[type].description ?? type);
  }
  return Object.keys(params).length > 0 ? { params } : {};
}

function extend(schema: z.ZodType, extra: Record<string, z.ZodType>): z.ZodType {
  if (schema instanceof z.ZodUnion) return z.union((schema.options as z.ZodType[]).map((option) => extend(option, extra)) as [z.ZodType, z.ZodType]);
  return (schema as z.ZodObject).extend(extra);
}
