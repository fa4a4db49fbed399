// The memory section of the system prompt (the memory capability's promptBuilder).
// NOTE: it never says context was recalled: the injected block says so itself, on the
// turns that get one (a section is the same on every turn).

/** The memory section of the system prompt, naming only the tools the run has. */
export function promptSection(tools: { has: (name: string) => boolean }): string[] {
  if (!tools.has("memory_search") && !tools.has("memory_get")) return [];
  return [
    "## Memory (OpenClawBrain)",
    "Before answering about prior work, decisions, errors and their fixes, people, preferences or todos: run memory_search; use memory_get to read only the lines you need.",
    ...(tools.has("memory_recall") ? ["For what is known about a person, a period or a decision, memory_recall returns typed facts."] : []),
    ...(tools.has("memory_retain") ? ["Keep a durable fact for later sessions with memory_retain (it is recorded as your claim)."] : []),
    ...(tools.has("memory_feedback") ? ["Once you know whether a memory_search helped, say so with memory_feedback."] : []),
    "Cite what you use as path#L (for example memory/2026-01-02.md#L4-L6). If memory is unavailable, say so and go on.",
    "",
  ];
}
