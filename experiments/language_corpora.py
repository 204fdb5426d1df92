"""Corpora in other languages and scripts, built from Debian packages, in the quick start's input format (a sentence
a line, a blank line between documents, no blank line at the end), for measuring the quick start beyond English.

    .venv/bin/python -m experiments.language_corpora --out /tmp/language_corpora        # every corpus below
    .venv/bin/python -m experiments.language_corpora --out /tmp/language_corpora --only chinese japanese
    .venv/bin/python -m experiments.language_corpora --out tests/fixtures/languages --only chinese \
        --every 4 --by_package && gzip -9n tests/fixtures/languages/*.txt  # the large-tier test's text

The packages are fetched with `apt-get download` (from a Debian 12 "bookworm" archive; nothing is installed) into
`--debs` and unpacked there with `dpkg-deb -x`; a package already unpacked there is reused. The versions measured
are pinned (`PACKAGES`): another version gives other text.

- `chinese` (Han, simplified): manpages-zh 1.6.4.0-1, its zh_CN pages (GFDL-1.2+ and GPL-2+, page by page), and
  libreoffice-help-zh-cn 4:7.4.7-1+deb12u14 (MPL-2.0); a manual page or a help page a document.
- `japanese` (kana and kanji): manpages-ja 0.5.0.0.20221215+dfsg-1 (each page under its original's licence, as
  its copyright file says) and libreoffice-help-ja 4:7.4.7-1+deb12u14 (MPL-2.0); a manual page or a help page a
  document.
- `german` (Latin with umlauts): manpages-de 4.18.1-1 (manpages-l10n, GPL-3+); a manual page a document.
- `russian` (Cyrillic): manpages-ru 4.18.1-1 (GPL-3+) and libreoffice-help-ru 4:7.4.7-1+deb12u14 (MPL-2.0).
- `polish` (Latin with diacritics): manpages-pl 1:4.18.1-1 (GPL-3+) and libreoffice-help-pl 4:7.4.7-1+deb12u14.
- `thai_ui` (Thai): libreoffice-l10n-th 4:7.4.7-1+deb12u14 (MPL-2.0), its catalogues' msgstr, a catalogue a
  document and a string a line.

And text of the same language from other packages, never trained on, for the [UNK] share on text outside the
corpora (`<name>_outside.txt`, same format, a chapter or page a document): debian-reference-zh-cn, -ja and -de 2.100
(GPL-2+), maint-guide-ru 1.2.53 and debian-faq-ru 11.1 (GPL-2+).

From a manual page's troff source the text of its paragraphs is kept: headings, the tag lines of `.TP` (option
names), no-fill blocks (`.nf`/`.fi`, `.EX`/`.EE`: examples, synopses), tables and macro definitions are left out;
font and size escapes are removed and special characters written as escapes are spelt out. In the Chinese,
Japanese and Russian pages a paragraph without a letter of the language's script is an untranslated English one
and is left out; in the Polish ones, a paragraph without any of ąćęłńóśźż (nearly every Polish paragraph has one,
no English one has). Sentences end after 。！？ (and ．) or by the package's rule for the other scripts
(`bert_tf.text.sentences`). The Thai catalogues are UI strings: for the pieces-per-word measurement of
`experiments.unsegmented_languages` only, too small and too short for pre-training.
"""

import argparse
import gettext
import glob
import gzip
import html.parser
import os
import re
import subprocess
import sys

from bert_tf.text.sentences import split_sentences

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_CYRILLIC = "\u0400-\u04ff"
PACKAGES = {
    "manpages-zh": "1.6.4.0-1", "manpages-ja": "0.5.0.0.20221215+dfsg-1", "manpages-de": "4.18.1-1",
    "manpages-ru": "4.18.1-1", "manpages-pl": "1:4.18.1-1", "libreoffice-l10n-th": "4:7.4.7-1+deb12u14",
    "debian-reference-zh-cn": "2.100", "debian-reference-ja": "2.100", "debian-reference-de": "2.100",
    "maint-guide-ru": "1.2.53", "debian-faq-ru": "11.1", "libreoffice-help-zh-cn": "4:7.4.7-1+deb12u14",
    "libreoffice-help-ru": "4:7.4.7-1+deb12u14", "libreoffice-help-pl": "4:7.4.7-1+deb12u14",
    "libreoffice-help-ja": "4:7.4.7-1+deb12u14",
}
_MAN, _HELP = "usr/share/man/{}/man*/*.gz", "usr/share/libreoffice/help/{}/text/**/*.html"
_POLISH = "ąćęłńóśźżĄĆĘŁŃÓŚŹŻ"
# name -> (letters a kept paragraph holds one of, or None: an untranslated English paragraph is left out by them;
# [(Debian package, its files inside it, their reader)])
CORPORA = {
    "chinese": (_HAN, [("manpages-zh", _MAN.format("zh_CN"), "man"),
                       ("libreoffice-help-zh-cn", _HELP.format("zh-CN"), "html")]),
    "japanese": (_KANA + _HAN, [("manpages-ja", _MAN.format("ja"), "man"),
                                ("libreoffice-help-ja", _HELP.format("ja"), "html")]),
    "german": (None, [("manpages-de", _MAN.format("de"), "man")]),
    "russian": (_CYRILLIC, [("manpages-ru", _MAN.format("ru"), "man"),
                            ("libreoffice-help-ru", _HELP.format("ru"), "html")]),
    "polish": (_POLISH, [("manpages-pl", _MAN.format("pl"), "man"),
                         ("libreoffice-help-pl", _HELP.format("pl"), "html")]),
    "thai_ui": (None, [("libreoffice-l10n-th", "usr/lib/libreoffice/program/resource/th/LC_MESSAGES/*.mo", "mo")]),
    "chinese_outside": (_HAN, [("debian-reference-zh-cn", "usr/share/debian-reference/ch*.zh-cn.html", "html")]),
    "japanese_outside": (_KANA + _HAN, [("debian-reference-ja", "usr/share/debian-reference/ch*.ja.html", "html")]),
    "german_outside": (None, [("debian-reference-de", "usr/share/debian-reference/ch*.de.html", "html")]),
    "russian_outside": (_CYRILLIC, [("maint-guide-ru", "usr/share/doc/**/*.ru.html", "html"),
                                    ("debian-faq-ru", "usr/share/doc/**/*.ru.html", "html")]),
}

_CJK_END = re.compile(r"(?<=[。！？．])[」』）”’)]*")
_NO_SPACE = re.compile(f"[{_HAN}{_KANA}\u3000-\u303f\uff00-\uffef]")
# troff's named characters that carry text (others, e.g. box-drawing, are dropped)
_NAMED = {"em": "—", "en": "–", "hy": "-", "lq": "“", "rq": "”", "oq": "‘", "cq": "’", "aq": "'", "dq": '"',
          "bu": "•", "co": "©", "rg": "®", "tm": "™", "mu": "×", "di": "÷", "de": "°", ">=": "≥", "<=": "≤",
          "!=": "≠", "+-": "±", "ti": "~", "ha": "^", "ga": "`", "bv": "|", "rs": "\\", "sl": "/", "Fo": "«",
          "Fc": "»", "fo": "‹", "fc": "›", "->": "→", "<-": "←", "pc": "·", "ss": "ß", ":a": "ä", ":o": "ö",
          ":u": "ü", ":A": "Ä", ":O": "Ö", ":U": "Ü", "'e": "é", "`e": "è", "Eu": "€", "eu": "€"}
_ESCAPE = re.compile(r"""\\(?:
    [fFsmM](?:\((?:..)|\[[^\]]*\]|[+-]?\d+|.)          # font, size, colour
  | [*n](?:\((?:..)|\[[^\]]*\]|.)                     # strings and number registers
  | [kwhvNoxXzlLDbHSABCRZY]'[^']*'                   # escapes with a quoted argument
  | \((?P<named2>..) | \[(?P<named>[^\]]*)\]           # named characters
  | (?P<single>.)
)""", re.VERBOSE)
_SINGLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", "`": "`", ".": "."}
_TEXT_MACROS = {"B", "I", "SM", "SB", "BI", "BR", "IB", "IR", "RB", "RI", "UR", "MT"}
_BREAK_MACROS = {"PP", "P", "LP", "sp", "br", "HP", "RS", "RE", "in", "IP", "TP", "SH", "SS", "bp", "ti", "TQ"}
_SKIP_BLOCKS = {"nf": "fi", "EX": "EE", "TS": "TE", "de": "..", "EQ": "EN", "ig": ".."}


def _named(name):
    if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
        return chr(int(name[1:], 16))
    return _NAMED.get(name, "")


def unescape(text):
    """A troff text line with its escapes removed or spelt out (`\\fBls\\fP \\- list` -> `ls - list`)."""
    def replace(match):
        name = match.group("named") or match.group("named2")
        if name is not None:
            return _named(name)
        single = match.group("single")
        if single is None:
            return ""
        if single == '"':
            return "\0"  # a comment: the rest of the line goes
        return _SINGLE.get(single, "")
    return _ESCAPE.sub(replace, text).split("\0")[0]


def _macro_arguments(line):
    """The arguments of a macro line, quotes removed (`.BR "ls" (1)` -> ['ls', '(1)'])."""
    return [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', line)][1:]


def man_paragraphs(source):
    """The prose paragraphs of a manual page's troff source (a list of str); [] for a `.so` alias page."""
    paragraphs, current, end_of_block, tag_next = [], [], None, False
    for line in source.replace("\r", "").split("\n"):
        if end_of_block:
            if line.rstrip() == "." + end_of_block or line.startswith("." + end_of_block + " "):
                end_of_block = None
            continue
        if line.startswith(("'", ".")):
            macro = line[1:].split(None, 1)[0] if line[1:].strip() else ""
            if macro == "so":
                return []
            if macro in _SKIP_BLOCKS:
                end_of_block = _SKIP_BLOCKS[macro]
            if macro in _BREAK_MACROS and current:
                paragraphs.append(current)
                current = []
            if macro in ("TP", "TQ"):
                tag_next = True
            elif macro in _TEXT_MACROS and tag_next:  # the tag of a .TP item: an option's name, not prose
                tag_next = False
            elif macro in _TEXT_MACROS:
                joiner = "" if len(macro) == 2 and macro not in ("SM", "SB", "UR", "MT") else " "
                text = unescape(joiner.join(_macro_arguments(line)))
                if macro not in ("UR", "MT") and text.strip():
                    current.append(text)
            continue
        if tag_next:  # the tag of a .TP item: an option's name, not prose
            tag_next = False
            continue
        text = unescape(line)
        if text.strip():
            current.append(text.strip())
    if current:
        paragraphs.append(current)
    return [_join_lines(p) for p in paragraphs]


def _join_lines(lines):
    """A paragraph's lines as one string: no space where a line ends or the next starts with a CJK character (it
    would split a word of a text written without spaces), a space elsewhere."""
    text = lines[0]
    for line in lines[1:]:
        text += ("" if _NO_SPACE.match(text[-1:]) or _NO_SPACE.match(line[:1]) else " ") + line
    return text


class _HtmlText(html.parser.HTMLParser):
    """The paragraphs of an HTML page (p, li, dd, td, div), without headings, listings (pre), navigation, scripts
    or styles."""

    _BLOCKS = {"p", "li", "dd", "dt", "td", "th", "div", "br"}
    _SKIP = {"script", "style", "pre", "head", "header", "nav", "aside", "footer", "h1", "h2", "h3", "h4", "h5"}

    def __init__(self):
        super().__init__()
        self.paragraphs, self._current, self._skip = [], [], 0

    def _flush(self):
        text = " ".join("".join(self._current).split())
        if text:
            self.paragraphs.append(text)
        self._current = []

    def handle_starttag(self, tag, attrs):
        self._skip += tag in self._SKIP
        if tag in self._BLOCKS:
            self._flush()

    def handle_endtag(self, tag):
        self._skip -= tag in self._SKIP and self._skip > 0
        if tag in self._BLOCKS:
            self._flush()

    def handle_data(self, data):
        if not self._skip:
            self._current.append(data)


def html_paragraphs(source):
    parser = _HtmlText()
    parser.feed(source)
    parser.close()
    parser._flush()
    return parser.paragraphs


def catalogue_strings(path):
    """A compiled gettext catalogue's translations (msgstr), the header and accelerator marks (~) left out."""
    with open(path, "rb") as f:
        catalogue = gettext.GNUTranslations(f)._catalog
    strings = []
    for key, value in catalogue.items():
        msgid = key[0] if isinstance(key, tuple) else key
        if msgid and isinstance(value, str) and value.strip():
            strings.append(" ".join(value.replace("~", "").split()))
    return sorted(set(strings))


def sentences_of(paragraph):
    """A paragraph's sentences: ends after 。！？．, else the package's rule for text with spaces."""
    sentences = []
    for piece in _CJK_END.split(paragraph):
        sentences.extend(split_sentences(piece))
    return sentences


def read_documents(paths, reader, letters):
    """Documents (lists of sentences) from the files, one a file; a paragraph without any of `letters` (where
    given) is left out, and so is a document of fewer than two sentences."""
    script = re.compile(f"[{letters}]") if letters else None
    documents = []
    for path in sorted(paths):
        if reader == "mo":
            documents.append(catalogue_strings(path))
            continue
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            source = f.read()
        paragraphs = man_paragraphs(source) if reader == "man" else html_paragraphs(source)
        sentences = [s for p in paragraphs if not script or script.search(p) for s in sentences_of(p)]
        if len(sentences) >= 2:
            documents.append(sentences)
    return documents


def unpacked(package, debs):
    """The folder `package` is unpacked in (apt-get download + dpkg-deb -x, once)."""
    folder = os.path.join(debs, package)
    if not os.path.isdir(folder):
        os.makedirs(debs, exist_ok=True)
        subprocess.run(["apt-get", "download", f"{package}={PACKAGES[package]}"], cwd=debs, check=True)
        deb = glob.glob(os.path.join(debs, f"{package}_*.deb"))[0]
        subprocess.run(["dpkg-deb", "-x", deb, folder + ".tmp"], check=True)
        os.replace(folder + ".tmp", folder)
    return folder


def write_corpus(documents, path):
    """Writes documents in the quick start's format (a blank line between documents only); returns its bytes."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(sentences) for sentences in documents) + "\n")
    os.replace(path + ".tmp", path)
    return os.path.getsize(path)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="Folder for <corpus>.txt")
    parser.add_argument("--debs", default="/tmp/language_corpora_debs", help="Folder for the packages.")
    parser.add_argument("--only", nargs="*", choices=sorted(CORPORA), help="Only these corpora.")
    parser.add_argument("--every", type=int, default=1, help="Keep every Nth document of each package only.")
    parser.add_argument("--by_package", action="store_true", help="A file per package, <corpus>-<package>.txt.")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or CORPORA:
        letters, sources = CORPORA[name]
        parts = {}
        for package, pattern, reader in sources:
            paths = glob.glob(os.path.join(unpacked(package, args.debs), pattern), recursive=True)
            parts[package] = read_documents(paths, reader, letters)[::args.every]
        outputs = {f"{name}-{package}": documents for package, documents in parts.items()} if args.by_package \
            else {name: [d for documents in parts.values() for d in documents]}
        for output, documents in outputs.items():
            path = os.path.join(args.out, f"{output}.txt")
            size = write_corpus(documents, path)
            print(f"{output}: {len(documents)} documents, {sum(map(len, documents))} lines, {size / 1e6:.1f} MB "
                  f"-> {path}")

if __name__ == "__main__":
    main(sys.argv[1:])
