import { z } from "zod";
import { listOf } from "../../domain/public.js";
import { CreateRoutineInput, RoutineJson, RoutineName, UpdateRoutineInput } from "../../domain/routines.js";
import { ListRoutinesQuery, presentRoutine } from "../../engine/routines/index.js";
import { defineRoute } from "../route.js";
import { errorResponses } from "./common.js";

/** A name to look up: any shape that names no routine is a 404, as an id is (DESIGN §5); only saving checks its shape. */
const NameParams = z.strictObject({ name: z.string().min(1).max(200).describe(RoutineName.description ?? "") });

export const routineRoutes = [
  defineRoute({
    method: "post",
    path: "/v1/routines",
    tag: "routines",
    summary: "Save a routine",
    description:
      'A named, parameterised recipe of browser steps for one platform (DESIGN §14), run as an action of type `routine`. Steps name their targets by role and name, label or text (CSS and XPath are refused); `{{param}}` placeholders must be params of its schema; `goto` is a path of the platform. Mark a secret param `"writeOnly": true`: its values are sealed and never shown. A name that exists is a 409: save a new version with PUT.',
    body: CreateRoutineInput,
    responses: { 201: { description: "The routine, version 1 (or the next, for a name deleted before).", schema: RoutineJson }, ...errorResponses(400, 401, 403, 409, 422, 429) },
    async handle({ principal, body, engine }) {
      return { status: 201, body: presentRoutine(await engine.routines.create(principal, body)) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/routines",
    tag: "routines",
    summary: "List routines",
    query: ListRoutinesQuery,
    responses: { 200: { description: "The workspace's routines, by name, each at its latest version.", schema: listOf(RoutineJson) }, ...errorResponses(401, 403, 422, 429) },
    async handle({ principal, query, engine }) {
      return { status: 200, body: { data: (await engine.routines.list(principal, query.platform)).map(presentRoutine) } };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/routines/{name}",
    tag: "routines",
    summary: "Get a routine",
    params: NameParams,
    responses: { 200: { description: "Its latest version, with every version listed.", schema: RoutineJson }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      return { status: 200, body: presentRoutine(await engine.routines.get(principal, params.name)) };
    },
  }),
  defineRoute({
    method: "put",
    path: "/v1/routines/{name}",
    tag: "routines",
    summary: "Save a new version of a routine",
    description: "Versions are never changed: this writes the next one, which new actions run; an action records the version it ran.",
    params: NameParams,
    body: UpdateRoutineInput,
    responses: { 200: { description: "The routine at its new version.", schema: RoutineJson }, ...errorResponses(400, 401, 403, 404, 422, 429) },
    async handle({ principal, params, body, engine }) {
      return { status: 200, body: presentRoutine(await engine.routines.update(principal, params.name, body)) };
    },
  }),
  defineRoute({
    method: "delete",
    path: "/v1/routines/{name}",
    tag: "routines",
    summary: "Delete a routine",
    description: "It can no longer run; its versions are kept, so the actions that ran them stay readable, and saving the name again continues its numbering.",
    params: NameParams,
    responses: { 204: { description: "Deleted." }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      await engine.routines.delete(principal, params.name);
      return { status: 204 };
    },
  }),
];
