// `svc completion bash|zsh|fish` prints a script that asks `svc __complete` for the candidates, so the shells share
// one implementation: commands, subcommands and options from the commander tree; tool names and each tool's fields
// (and the values of fields with a fixed set) from the catalogue built into this svc, as cli/tool-fields.ts carries it:
// a TAB loads neither the catalogue nor the server.
import { Argument, Command } from "commander";
import { action, example, usageExits } from "../output.ts";
import { shorthandFields, shorthandValues } from "../shorthands.ts";
import { type ToolFields, toolFields } from "../tool-fields.ts";

const SCRIPTS = {
  bash: `# svc completion for bash: save as ~/.local/share/bash-completion/completions/svc, or in ~/.bashrc: source <(svc completion bash)
_svc_complete() {
  local line="\${COMP_LINE:0:COMP_POINT}" word
  local -a words replies
  read -ra words <<< "$line"
  [[ $line == *" " ]] && words+=("")
  word="\${words[\${#words[@]}-1]}"
  local IFS=$'\\n'
  replies=($(svc __complete -- "\${words[@]:1}" 2>/dev/null))
  # bash splits words at "=": offer only what follows the last "=" of a field=value word.
  if [[ $word == *=* && $COMP_WORDBREAKS == *=* ]]; then replies=("\${replies[@]#"\${word%=*}="}"); fi
  COMPREPLY=("\${replies[@]}")
  [[ \${#COMPREPLY[@]} -eq 1 && \${COMPREPLY[0]} == *= ]] && compopt -o nospace
  return 0
}
complete -F _svc_complete svc
`,
  zsh: `#compdef svc
# svc completion for zsh: add to ~/.zshrc (after compinit):  source <(svc completion zsh)
_svc() {
  local -a replies
  replies=(\${(f)"$(svc __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)"})
  compadd -S '' -- \${(M)replies:#*=}
  compadd -- \${replies:#*=}
}
compdef _svc svc
`,
  fish: `# svc completion for fish: svc completion fish > ~/.config/fish/completions/svc.fish
complete -c svc -f -a '(svc __complete -- (commandline -opc)[2..-1] (commandline -ct))'
`,
} as const;

const visible = (cmd: Command) => cmd.commands.filter((c) => !(c as unknown as { _hidden: boolean })._hidden);
const startingWith = (prefix: string, words: string[]) => words.filter((w) => w.startsWith(prefix));

/** Candidates for the last word of `svc words...`. */
export function complete(program: Command, tools: ToolFields, words: string[]): string[] {
  const cur = words.at(-1) ?? "";
  const before = words.slice(0, -1);
  let cmd = program;
  const positional: string[] = [];
  for (let i = 0; i < before.length; i++) {
    const w = before[i]!;
    const sub = visible(cmd).find((c) => c.name() === w);
    if (sub && !positional.length) {
      cmd = sub;
      continue;
    }
    if (w.startsWith("-")) {
      // An option that takes a value consumes the next word.
      const opt = cmd.options.find((o) => o.long === w || o.short === w);
      if (opt && (opt.required || opt.optional)) i++;
      continue;
    }
    positional.push(w);
  }
  if (cur.startsWith("-")) return startingWith(cur, [...cmd.options.flatMap((o) => (o.long && !o.hidden ? [o.long] : [])), "--help"]);
  if (cmd === program || (visible(cmd).length && !positional.length))
    return startingWith(
      cur,
      visible(cmd).map((c) => c.name()),
    );
  const name = cmd.name();
  if ((name === "call" || name === "tools") && !positional.length) return startingWith(cur, Object.keys(tools));
  if (name === "completion" && !positional.length) return startingWith(cur, Object.keys(SCRIPTS));
  const props = name === "call" && Object.hasOwn(tools, positional[0]!) ? tools[positional[0]!] : undefined;
  if (!props) return [];
  const eq = cur.indexOf("=");
  if (eq > 0) {
    const field = cur.slice(0, eq);
    return startingWith(
      cur,
      [...(Object.hasOwn(props, field) ? props[field]! : []), ...shorthandValues(field, props)].map((v) => `${field}=${v}`),
    );
  }
  const given = new Set(positional.slice(1).map((p) => p.split("=")[0]!));
  return startingWith(
    cur,
    [...Object.keys(props).filter((f) => f !== "idempotency_key" && !given.has(f)), ...shorthandFields(props, given)].map((f) => `${f}=`),
  );
}

export function completionCommand(): Command {
  return usageExits(
    new Command("completion")
      .description("Print a shell completion script for svc: commands, options, tool names and each tool's fields")
      .addArgument(new Argument("<shell>", "the shell").choices(Object.keys(SCRIPTS)))
      .addHelpText(
        "after",
        example(
          "svc completion bash > ~/.local/share/bash-completion/completions/svc   # or in ~/.bashrc: source <(svc completion bash)",
          "source <(svc completion zsh)                                          # in ~/.zshrc, after compinit",
          "svc completion fish > ~/.config/fish/completions/svc.fish",
        ) + "\nTool names and fields come from the catalogue built into this svc; svc must be on your PATH.\n",
      )
      .action(action(async (shell: keyof typeof SCRIPTS) => void process.stdout.write(SCRIPTS[shell]))),
  );
}

/** The hidden command the scripts call: `svc __complete -- WORDS...`, the last word being the one to complete. */
export function completeCommand(program: Command): Command {
  return new Command("__complete")
    .argument("[words...]")
    .allowUnknownOption()
    .helpOption(false)
    .action(async (words: string[]) => {
      const found = complete(program, await toolFields(), words.length ? words : [""]);
      if (found.length) process.stdout.write(`${found.join("\n")}\n`);
    });
}
