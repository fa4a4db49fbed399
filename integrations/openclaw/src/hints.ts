// before_tool_call: knowledge-graph facts about tool:<name> as the tool's parameters.

/**
 * Put a fact into a tool's params without overriding the model: a missing key gets the value
 * (`NAME=value` as an object `{NAME: value}`, as for an env; a number or true/false as one),
 * an object param gets NAME added.
 */
export function mergeHint(params: Record<string, unknown>, predicate: string, value: string): void {
  const current = params[predicate];
  const kv = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(value);
  if (current === undefined) {
    params[predicate] = kv ? { [kv[1] ?? ""]: kv[2] ?? "" } : scalar(value);
    return;
  }
  if (kv && current && typeof current === "object" && !Array.isArray(current)) {
    const obj = current as Record<string, unknown>;
    const k = kv[1] ?? "";
    if (!(k in obj)) params[predicate] = { ...obj, [k]: kv[2] ?? "" };
  }
}

function scalar(value: string): unknown {
  if (/^-?\d+(?:\.\d+)?$/.test(value)) return Number(value);
  if (value === "true" || value === "false") return value === "true";
  return value;
}
