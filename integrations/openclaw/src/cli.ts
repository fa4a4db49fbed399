// `openclaw brain status|search|why`: the daemon's status, a recorded-nothing query, and
// the audit of a chunk (why it is where it is: its edges and what changed them).
import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";
import type { Settings } from "./config.ts";
import type { Daemon } from "./daemon.ts";
import type { Found } from "./recall.ts";

type Program = Parameters<Parameters<OpenClawPluginApi["registerCli"]>[0]>[0]["program"];

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

async function run(daemon: Daemon | null, work: (d: Daemon) => Promise<unknown>): Promise<void> {
  if (!daemon) {
    process.stderr.write("error: no workspace: set agents.defaults.workspace or plugins.entries.ocb-memory.config.workspace\n");
    process.exitCode = 1;
    return;
  }
  try {
    print(await work(daemon));
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}

export function registerBrainCli(
  api: OpenClawPluginApi,
  _settings: Settings,
  daemonFor: (workspaceDir: string | undefined) => Daemon | null,
): void {
  api.registerCli(
    ({ program, workspaceDir }: { program: Program; workspaceDir?: string }) => {
      const brain = program.command("brain").description("OpenClawBrain memory: status, search, why");
      brain
        .command("status")
        .description("The daemon's status (starts it when none runs)")
        .action(() => run(daemonFor(workspaceDir), (d) => d.call("status")));
      brain
        .command("search")
        .description("Search the memory (records nothing)")
        .argument("<query...>", "the question")
        .option("--top <n>", "results", "5")
        .action((words: string[], opts: { top: string }) =>
          run(daemonFor(workspaceDir), async (d) => {
            const top = Math.max(1, Number(opts.top) || 5);
            const found = await d.call<Found>("search", { text: words.join(" "), top, record: false, style: "openclaw" });
            return { query: found.query, results: found.results };
          }),
        );
      brain
        .command("why")
        .description("Why a chunk is recalled: its edges and the outcomes that changed them")
        .argument("<node>", "a chunk id, e.g. runbooks/rollback.md::0")
        .action((node: string) => run(daemonFor(workspaceDir), (d) => d.call("audit", { node })));
    },
    { descriptors: [{ name: "brain", description: "OpenClawBrain memory: status, search, why", hasSubcommands: true }] },
  );
}
