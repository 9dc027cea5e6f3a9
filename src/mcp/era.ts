/** The protocol era of a connection: 2025 (`initialize`, sessions, pushed requests) or 2026-07-28 (stateless, `input_required`). */
export type McpEra = "legacy" | "modern";
