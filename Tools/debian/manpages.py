#!/usr/bin/env python3
"""Writes docsync's man pages from its argument parser: docsync.1 and one page per subcommand
(docsync-mount.1, docsync-hub-init.1, ...), from `DOCSYNC --experimental-dump-help`, the JSON
that swift-argument-parser's own generate-manual plugin reads. The pages therefore say what
`--help` says, for the very binary that is packaged.

Usage: Tools/debian/manpages.py DOCSYNC OUTPUT-FOLDER VERSION DATE

Why not the plugin (`swift package plugin generate-manual`)? It works offline here (on
2026-11-28: 57 s to build its tool, then it builds every product of the package, benchmarks
and test tools included, in the configuration asked for, without --static-swift-stdlib), and
it names the pages docsync.mount.1; these are docsync-mount.1, as git's are. The JSON it
reads is the same.
"""

import json
import os
import subprocess
import sys

SEE_ALSO_DOCS = "/usr/share/doc/docsync"


def roff(text):
    """Escapes text for a roff line: backslashes, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def flag_names(argument):
    names = []
    for name in argument.get("names") or []:
        prefix = {"long": "--", "short": "-", "longWithSingleDash": "-"}[name["kind"]]
        names.append(prefix + name["name"])
    return names


def synopsis(command, path):
    words = []
    for argument in command.get("arguments") or []:
        if not argument.get("shouldDisplay", True):
            continue
        value = argument.get("valueName") or "value"
        if argument["kind"] == "positional":
            word = "\\fI" + roff(value) + "\\fR"
        else:
            preferred = argument.get("preferredName") or (argument.get("names") or [None])[0]
            if preferred is None:
                continue
            prefix = {"long": "--", "short": "-", "longWithSingleDash": "-"}[preferred["kind"]]
            word = "\\fB" + roff(prefix + preferred["name"]) + "\\fR"
            if argument["kind"] == "option":
                word += " \\fI" + roff(value) + "\\fR"
        if argument.get("isRepeating"):
            word += " ..."
        if argument.get("isOptional"):
            word = "[" + word + "]"
        words.append(word)
    if command.get("subcommands"):
        words.append("\\fIcommand\\fR")
    return "\\fB" + roff(" ".join(path)) + "\\fR " + " ".join(words)


def options_section(command):
    out = []
    for argument in command.get("arguments") or []:
        if not argument.get("shouldDisplay", True):
            continue
        value = argument.get("valueName") or "value"
        if argument["kind"] == "positional":
            label = "\\fI" + roff(value) + "\\fR"
        else:
            names = flag_names(argument)
            label = ", ".join("\\fB" + roff(n) + "\\fR" for n in names)
            if argument["kind"] == "option":
                label += " \\fI" + roff(value) + "\\fR"
        text = argument.get("abstract") or ""
        if argument.get("discussion"):
            text += "\n" + argument["discussion"]
        if argument.get("defaultValue") and argument["kind"] == "option":
            text += " (default: " + argument["defaultValue"] + ")"
        out.append(".TP\n" + label + "\n" + roff(text.strip()))
    return "\n".join(out)


def page(command, path, version, date, parent):
    name = "-".join(path)
    lines = [
        '.TH "%s" "1" "%s" "docsync %s" "User Commands"' % (name.upper(), date, version),
        ".SH NAME",
        roff(name) + " \\- " + roff(command.get("abstract") or ""),
        ".SH SYNOPSIS",
        synopsis(command, path),
    ]
    if command.get("discussion") or command.get("abstract"):
        lines += [".SH DESCRIPTION", roff(command.get("discussion") or command["abstract"])]
    options = options_section(command)
    if options:
        lines += [".SH OPTIONS", options]
    subcommands = [c for c in command.get("subcommands") or [] if c.get("shouldDisplay", True)]
    if subcommands:
        lines.append(".SH COMMANDS")
        for sub in subcommands:
            if sub["commandName"] == "help":
                continue
            lines += [
                ".TP",
                "\\fB" + roff(sub["commandName"]) + "\\fR",
                roff((sub.get("abstract") or "") + " See "),
            ]
            lines[-1] += "\\fB" + roff(name + "-" + sub["commandName"]) + "\\fR(1)."
    lines += [".SH EXIT STATUS", "0 on success, 1 with a one-line message on error, 2 for wrong usage."]
    see = []
    if parent:
        see.append("\\fB" + roff(parent) + "\\fR(1)")
    see += ["\\fB" + roff(name + "-" + s["commandName"]) + "\\fR(1)"
            for s in subcommands if s["commandName"] != "help"]
    lines += [".SH SEE ALSO", ", ".join(see + ["\\fBfusermount3\\fR(1)"]) + ".",
              "The guides by topic are in " + roff(SEE_ALSO_DOCS) + "/docs/."]
    return name, "\n".join(lines) + "\n"


def walk(command, path, version, date, parent, pages):
    name, text = page(command, path, version, date, parent)
    pages[name] = text
    for sub in command.get("subcommands") or []:
        if sub.get("shouldDisplay", True) and sub["commandName"] != "help":
            walk(sub, path + [sub["commandName"]], version, date, name, pages)


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: manpages.py DOCSYNC OUTPUT-FOLDER VERSION DATE")
    binary, folder, version, date = sys.argv[1:]
    dump = subprocess.run([binary, "--experimental-dump-help"], check=True,
                          capture_output=True, text=True).stdout
    info = json.loads(dump)
    pages = {}
    walk(info["command"], [info["command"]["commandName"]], version, date, None, pages)
    os.makedirs(folder, exist_ok=True)
    for name, text in sorted(pages.items()):
        with open(os.path.join(folder, name + ".1"), "w") as f:
            f.write(text)
    print("\n".join(sorted(pages)))


if __name__ == "__main__":
    main()
