"""Draw the fresh report slices of issue 65 (item 5) from public copies of the official dev files.

These are held-out report questions: drawn once, before any run, to be read only after the final
comparison has run on them. Nothing here prints a question or an answer.

Sources (each copy is checked by sha256 before anything is drawn; get one with
``git show COMMIT:PATH`` in a clone of the repository; no network is needed to draw):

``hotpotqa``: AdelWang/MIGRES, ``data/hotpot.json``, commit
    a261f2b30ad5ff31e21c1c5fdc1763de738c1958 (blob 88ab7723975de5f2831479c1e05fa2b9a3becaa0,
    unchanged since): JSON lines, 200 HotpotQA dev (distractor) rows in the official layout,
    all ``level=hard``, plus a field ``reranked_ret_res`` (dropped here). Every question is, to the
    character, one of the 7,405 dev questions (OSU-NLP-Group/HippoRAG lists them all in
    ``output/hotpotqa_queries.named_entity_output.tsv``); the 15 rows it shares with
    ``../shared/data/hotpotqa/dev_hard_300_{a,b}.jsonl`` are identical to those.
``2wiki``: saptarshi059/TTS-project, ``sampled_data/2wikimultihopqa/sampled_ds.json``, commit
    1944830a96578f648fb6449809962524c79a8600 (blob 8080a1827169d7c88e1697ec4b3cfbefe16cba05,
    "Fresh sampled data"; later commits renamed ``_id``): 500 2WikiMultihopQA dev rows as pandas
    ``DataFrame.to_json()``, column-major ``{field: {row_key: value}}``, the fields and their order
    the official ones, each row key the row's position in the official ``dev.json`` (all 500 agree
    with the order of the 12,576 dev query ids in jzbjyb/FLARE
    ``data/2wikimultihopqa/qrels/dev.tsv``); the 7 rows it shares with
    ``../shared/data/2wikimultihopqa/dev_163_official.jsonl`` are identical to those.
``musique``: omarelansary/Balanced_KG_Wikontic (a fork of tyrueiz/Wikontic),
    ``datasets/musique_200_test.json``, added in commit 7fbe6bd401d87dbb95766a9a9f6fdd95d1a74377
    ("added datasets for reproducibility", blob 459334794b8c32175dc0ce6f995bd32fcd1d390):
    ``{"data": [...]}`` holding 200 answerable MuSiQue-Ans dev rows in the official layout. All 200
    ids are dev ids (peterbaile/lag ``data/musique/dev.json`` holds the whole dev set, 2,417 rows,
    without paragraphs): 198 rows agree with it on question, answer, aliases and decomposition, two
    have another question text (excluded below); the 20 rows it shares with
    ``../shared/data/musique/musique_ans_dev_174.jsonl`` are identical to those, paragraphs
    included.

Eligible rows: the source's rows of the expected shape (HotpotQA: ``level=hard``, ten paragraphs;
2Wiki: ten paragraphs, supporting facts and evidences; MuSiQue: answerable, twenty paragraphs, a
decomposition) whose id is in none of the ``EXCLUDED_IDS`` lists below and, when
``../shared/data`` is present, whose id and normalised question (HotpotQA's normalisation) match no
row of any file there. The lists name, for each source, the ids left out and why:

- ``shared``: a question of ``../shared/data`` (by id or normalised question text);
- ``dev_first_200``: among the first 200 rows of the official dev file, held out for checks
  outside this repository (matched on the question texts of ninehills/deepsearch-rl commit
  f4edf0842006a46a16fcdc348fe979eaba72192f ``data/*/*_dev_200.jsonl``, FlashRAG's first 200 dev
  rows; for 2Wiki and MuSiQue the dev position gives the same rows);
- ``hipporag_lineage_1000``: a question of the 1,000-question test sets that HippoRAG, GFM-RAG and
  OpenSPG/KAG's open benchmarks evaluate on (the copies in saptarshi059/TTS-project commit
  2925a83e4c4a7f535a7a1ba144634010d26dee8c ``data/{hotpotqa,2wikimultihopqa,musique}/test.json``):
  KAG's own ``qa.json`` files are 4 MiB and more and could not be read; its 2Wiki sample questions
  (``qa_sub.json``) are in this set, its HotpotQA and MuSiQue ones are not, so for those two the
  exclusion is a precaution only;
- ``kag``: the ids of KAG's ``qa_sub.json`` samples (none is in a source);
- ``altered``: MuSiQue rows whose question differs from the official dev file's.

Sampling: the eligible rows ordered by the sha256 hex digest of their id, ascending; the first N
are written in that order (so any contiguous slice mixes the types), one JSON object a line in the
source's official layout (``ensure_ascii=False``, as ``../shared/data`` is written).

Usage::

    python evals/data/fresh/draw.py hotpotqa hotpot.json
    python evals/data/fresh/draw.py 2wiki sampled_ds.json
    python evals/data/fresh/draw.py musique musique_200_test.json

Each writes ``evals/data/fresh/<file>`` (``--out`` to change it), checks the source's and the
result's sha256 against the recorded ones, and prints the counts by type, never a question.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import string
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

EXCLUDED_IDS: dict[str, dict[str, tuple[str, ...]]] = {
    "hotpotqa": {
        "shared": (
            "5a7332935542991f9a20c67d",
            "5a75d8a3554299109176e5a6",
            "5a79ca585542996c55b2dc71",
            "5a7f39d055429934daa2fd2a",
            "5a85fb085542994775f606de",
            "5a8645825542991e771815eb",
            "5a8a09ff5542992d82986e6b",
            "5a8a547d55429970aeb70293",
            "5a8e06785542995085b37383",
            "5a8e0c595542995085b373b0",
            "5a8e0dbd554299068b959e3e",
            "5ab9374b554299131ca422c6",
            "5aba5d2e55429901930fa799",
            "5abc0a5d5542993f40c73c64",
            "5abe364e5542993f32c2a08e",
            "5abee75f5542993fe9a41d8e",
            "5ac14d0c5542991316484ae2",
            "5ac175635542994ab5c67d4b",
            "5ade28b15542997c77aded83",
            "5adf51595542993344016c52",
        ),
        "dev_first_200": (
            "5a7332935542991f9a20c67d",
            "5a85fb085542994775f606de",
            "5ab9374b554299131ca422c6",
            "5aba5d2e55429901930fa799",
            "5abc0a5d5542993f40c73c64",
        ),
        "hipporag_lineage_1000": (
            "5a76b56d554299373536017b",
            "5a7e689f55429934daa2fc1c",
            "5a802b595542995d8a8ddf51",
            "5a8a410655429970aeb70279",
            "5a8a7d2b55429930ff3c0dfc",
            "5a8d8eb5554299068b959d3a",
            "5ab278745542997061209617",
            "5ab3849a55429969a97a8170",
            "5ab4396555429942dd415eed",
            "5ab48ec25542991779162cdc",
            "5ab9374b554299131ca422c6",
            "5abe250f5542991f661060ef",
            "5abe364e5542993f32c2a08e",
            "5ac2b2e2554299218029dafa",
            "5ac5630e5542993e66e823d5",
            "5adf51595542993344016c52",
            "5ae46b615542995dadf24327",
        ),
    },
    "2wiki": {
        "shared": (
            "09e3f8ac0bde11eba7f7acde48001122",
            "298f23b8088a11ebbd6eac1f6bf848b6",
            "4804b7fe08f511ebbdaaac1f6bf848b6",
            "4b97c01e0bdc11eba7f7acde48001122",
            "7df5e65b086711ebbd5eac1f6bf848b6",
            "9e6d7bdc08a111ebbd79ac1f6bf848b6",
            "b5dfb818089011ebbd72ac1f6bf848b6",
            "b5e9ef2c0bdd11eba7f7acde48001122",
            "d370f0b0085711ebbd5aac1f6bf848b6",
            "d72f1c660bdd11eba7f7acde48001122",
            "e618b2c608c911ebbd92ac1f6bf848b6",
            "f48d0344088c11ebbd70ac1f6bf848b6",
        ),
        "dev_first_200": (
            "298f23b8088a11ebbd6eac1f6bf848b6",
            "4b1b91720bde11eba7f7acde48001122",
            "9e6d7bdc08a111ebbd79ac1f6bf848b6",
            "a5bed06e0bdc11eba7f7acde48001122",
            "ae85fcce089411ebbd75ac1f6bf848b6",
            "b5e9ef2c0bdd11eba7f7acde48001122",
            "d13381ae08da11ebbd9cac1f6bf848b6",
            "d370f0b0085711ebbd5aac1f6bf848b6",
            "e618b2c608c911ebbd92ac1f6bf848b6",
            "e6688a7e0baf11ebab90acde48001122",
        ),
        "hipporag_lineage_1000": (
            "0016373a0bda11eba7f7acde48001122",
            "05b761f108e211ebbda3ac1f6bf848b6",
            "08b4d30e08d511ebbd98ac1f6bf848b6",
            "0b86c27208c611ebbd90ac1f6bf848b6",
            "121ddeae0bdc11eba7f7acde48001122",
            "1d913467087611ebbd67ac1f6bf848b6",
            "24672c120bde11eba7f7acde48001122",
            "2bd4454c0bda11eba7f7acde48001122",
            "43a0d7cd087d11ebbd6aac1f6bf848b6",
            "594ca25608df11ebbda0ac1f6bf848b6",
            "5f2bb1060bd911eba7f7acde48001122",
            "62ab4e000bb011ebab90acde48001122",
            "66119246086f11ebbd62ac1f6bf848b6",
            "69c0bb76087711ebbd67ac1f6bf848b6",
            "701433f00baf11ebab90acde48001122",
            "759305480bde11eba7f7acde48001122",
            "77ccf6e40bdd11eba7f7acde48001122",
            "7939c1460bd911eba7f7acde48001122",
            "890017540bdb11eba7f7acde48001122",
            "8ecf15540bdb11eba7f7acde48001122",
            "9711615e08cf11ebbd95ac1f6bf848b6",
            "a139d5b8096811ebbdafac1f6bf848b6",
            "a4f725e5088c11ebbd6fac1f6bf848b6",
            "ae585fc20bd911eba7f7acde48001122",
            "bbfe9c84087511ebbd67ac1f6bf848b6",
            "c213141e08e411ebbda4ac1f6bf848b6",
            "c5e4c82a0bdd11eba7f7acde48001122",
            "cd4ceac40bd911eba7f7acde48001122",
            "dced4bf7089e11ebbd78ac1f6bf848b6",
            "dd90826d086c11ebbd61ac1f6bf848b6",
            "e41f805c0bdb11eba7f7acde48001122",
            "e8df7a2e095c11ebbdaeac1f6bf848b6",
            "ee999f4408b211ebbd85ac1f6bf848b6",
            "f48d94d00bd911eba7f7acde48001122",
            "f6731dd308ab11ebbd82ac1f6bf848b6",
            "fe38def208b111ebbd85ac1f6bf848b6",
        ),
    },
    "musique": {
        "shared": (
            "2hop__142443_768138",
            "2hop__145082_35034",
            "2hop__16844_42173",
            "2hop__2148_78851",
            "2hop__25344_88628",
            "2hop__35173_17335",
            "2hop__374495_68633",
            "2hop__403060_92763",
            "2hop__50936_90973",
            "2hop__51113_84616",
            "2hop__66_59409",
            "2hop__6827_79845",
            "2hop__734057_88628",
            "2hop__88632_67668",
            "2hop__95878_88628",
            "2hop__96414_47902",
            "3hop1__19768_19788_15107",
            "3hop1__579562_629431_124169",
            "3hop1__586087_339990_54675",
            "3hop2__125104_90098_10557",
        ),
        "dev_first_200": (
            "2hop__115515_779396",
            "2hop__14092_8311",
            "2hop__274110_413723",
            "2hop__28287_89399",
            "2hop__335899_124498",
            "2hop__403712_793210",
            "2hop__42578_55840",
            "2hop__512773_346751",
            "2hop__567471_123283",
            "2hop__622308_61845",
            "2hop__82858_654855",
            "2hop__86689_728109",
        ),
        "hipporag_lineage_1000": (
            "2hop__10017_18974",
            "2hop__10620_79092",
            "2hop__121145_561444",
            "2hop__123148_5385",
            "2hop__128608_82341",
            "2hop__142699_67465",
            "2hop__145082_35034",
            "2hop__149862_108549",
            "2hop__25788_25839",
            "2hop__274110_413723",
            "2hop__35173_17335",
            "2hop__358582_189042",
            "2hop__364489_861485",
            "2hop__374495_68633",
            "2hop__403060_92763",
            "2hop__403712_793210",
            "2hop__448615_127908",
            "2hop__46550_85990",
            "2hop__472486_97805",
            "2hop__50936_90973",
            "2hop__511454_120259",
            "2hop__525242_52835",
            "2hop__530579_13529",
            "2hop__567588_67465",
            "2hop__581084_828685",
            "2hop__593633_82341",
            "2hop__606439_127399",
            "2hop__622308_61845",
            "2hop__6827_79845",
            "2hop__81268_85407",
            "2hop__81682_707195",
            "2hop__82713_84616",
            "2hop__835710_7298",
            "2hop__839126_472799",
            "2hop__846844_47134",
            "2hop__865828_377862",
            "2hop__88632_67668",
            "2hop__92385_2072",
            "2hop__96410_47902",
            "3hop1__140514_2053_5289",
            "3hop1__159803_89752_75165",
            "3hop1__222497_309482_41132",
            "3hop1__239036_15840_36014",
            "3hop1__302383_503371_21711",
            "3hop1__379315_160713_77246",
            "3hop1__465684_160545_60577",
            "3hop1__46571_87694_64412",
            "3hop1__475351_160713_77246",
            "3hop1__498954_160713_77246",
            "3hop1__579562_629431_124169",
            "3hop1__617062_127905_80286",
            "3hop1__622497_160088_821792",
            "3hop1__654651_55349_651302",
            "3hop1__79039_131926_87157",
            "3hop1__79462_91850_685675",
            "3hop1__797496_831637_91775",
            "3hop1__823336_228453_86925",
            "3hop1__831499_228453_10972",
            "3hop1__90327_78276_68042",
            "3hop2__125104_90098_10557",
            "3hop2__132957_379231_40768",
            "3hop2__14777_8533_9331",
            "3hop2__230_89048_66294",
            "3hop2__304722_692815_63959",
            "3hop2__607269_223623_162182",
            "3hop2__87184_90327_76291",
            "4hop1__130480_53706_795904_580996",
            "4hop1__131632_32392_823060_610794",
            "4hop1__567737_141375_458768_33633",
            "4hop1__813171_153080_33897_81096",
            "4hop1__88342_49853_128008_46748",
            "4hop1__88342_75218_128008_80487",
            "4hop1__88342_75218_128008_87812",
            "4hop2__103790_14670_8987_8529",
            "4hop3__316459_41402_145282_13584",
        ),
        "altered": (
            "2hop__364489_861485",
            "3hop2__230_89048_66294",
        ),
    },
}


def normalize_question(text: str) -> str:
    """HotpotQA's answer normalisation applied to a question: lowercase, no punctuation, no
    articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def row_id(row: dict[str, Any]) -> str | None:
    value = row.get("id", row.get("_id"))
    return None if value is None else str(value)


def _parse(text: str) -> Any:
    """A JSON document, or JSON lines as a list (MIGRES's ``hotpot.json`` is one row a line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _json_rows(path: Path) -> list[Any]:
    data = _parse(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return data["data"]
    return data if isinstance(data, list) else [data]


def question_keys(paths: Iterable[Path]) -> tuple[set[str], set[str]]:
    """The ids and normalised questions of every row with a question in the given files."""
    ids: set[str] = set()
    questions: set[str] = set()
    for path in paths:
        for row in _json_rows(path):
            if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                continue
            questions.add(normalize_question(row["question"]))
            if (rid := row_id(row)) is not None:
                ids.add(rid)
    return ids, questions


def shared_files(shared: Path) -> list[Path]:
    return sorted(p for p in shared.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())


def _hotpot_rows(data: Any) -> Iterator[dict[str, Any]]:
    for row in data:
        yield {key: row[key] for key in HOTPOT_FIELDS}


def _wiki2_rows(data: Any) -> Iterator[dict[str, Any]]:
    """Rows of a pandas column-major frame, in the frame's row order, fields in column order."""
    fields = list(data)
    if fields != WIKI2_FIELDS:
        raise SystemExit(f"unexpected 2Wiki columns: {fields}")
    for key in data["_id"]:
        yield {field: data[field][key] for field in fields}


def _musique_rows(data: Any) -> Iterator[dict[str, Any]]:
    for row in data["data"]:
        if list(row) != MUSIQUE_FIELDS:
            raise SystemExit(f"unexpected MuSiQue fields: {list(row)}")
        yield row


HOTPOT_FIELDS = ["_id", "answer", "question", "supporting_facts", "context", "type", "level"]
WIKI2_FIELDS = [
    "_id",
    "type",
    "question",
    "context",
    "entity_ids",
    "supporting_facts",
    "evidences",
    "answer",
    "evidences_id",
    "answer_id",
]
MUSIQUE_FIELDS = [
    "id",
    "paragraphs",
    "question",
    "question_decomposition",
    "answer",
    "answer_aliases",
    "answerable",
]


@dataclass(frozen=True)
class Slice:
    out: str
    count: int
    source_sha256: str
    rows: Callable[[Any], Iterator[dict[str, Any]]]
    shaped: Callable[[dict[str, Any]], bool]
    type_of: Callable[[dict[str, Any]], str]
    result_sha256: str


SLICES = {
    "hotpotqa": Slice(
        out="hotpotqa_dev_hard_fresh_100.jsonl",
        count=100,
        source_sha256="62f71ce08a74d35dd2de1713f57d15f68bbb499168a7d640f956332b7b19215e",
        rows=_hotpot_rows,
        shaped=lambda r: (
            r["level"] == "hard" and len(r["context"]) == 10 and bool(r["supporting_facts"])
        ),
        type_of=lambda r: r["type"],
        result_sha256="478066825edaf7f08d86e0d7271ba4bdd28198116b9d03461d1af9152b66dc2d",
    ),
    "2wiki": Slice(
        out="2wiki_dev_fresh_100.jsonl",
        count=100,
        source_sha256="260f6d4ebecd76c94f356ad185512d36dc3e23e0f8c09887392c6e8cac681502",
        rows=_wiki2_rows,
        shaped=lambda r: (
            len(r["context"]) == 10 and bool(r["supporting_facts"]) and bool(r["evidences"])
        ),
        type_of=lambda r: r["type"],
        result_sha256="448047c575fe7400f5a8342b812cb370511ba9d65f067d46e6236c89c9d8244f",
    ),
    "musique": Slice(
        out="musique_ans_dev_fresh_80.jsonl",
        count=80,
        source_sha256="8aa68ff58ed21b379d31757f3986c090ec2e7db755abe8906af96691eb1e2693",
        rows=_musique_rows,
        shaped=lambda r: (
            r["answerable"] is True
            and len(r["paragraphs"]) == 20
            and bool(r["question_decomposition"])
            and re.match(r"^[234]hop", r["id"]) is not None
        ),
        type_of=lambda r: r["id"].split("__")[0][:4],
        result_sha256="2e96b144d47f35ec83ee4fd45a7082dddbafb373f9bb9fcbd8d24fa7403006db",
    ),
}


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def draw(name: str, source: Path, shared: Path | None) -> tuple[list[dict[str, Any]], Counter]:
    """The drawn rows and the count of source rows left out, by reason."""
    spec = SLICES[name]
    raw = source.read_bytes()
    if (digest := sha256_hex(raw)) != spec.source_sha256:
        raise SystemExit(f"{source}: sha256 {digest}, expected {spec.source_sha256}")
    excluded = {rid: reason for reason, ids in EXCLUDED_IDS[name].items() for rid in ids}
    shared_ids: set[str] = set()
    shared_questions: set[str] = set()
    if shared is not None:
        shared_ids, shared_questions = question_keys(shared_files(shared))
    left_out: Counter = Counter()
    eligible = []
    for row in spec.rows(_parse(raw.decode("utf-8"))):
        rid = row_id(row)
        assert rid is not None
        if rid in excluded:
            left_out[excluded[rid]] += 1
        elif rid in shared_ids or normalize_question(row["question"]) in shared_questions:
            left_out["shared (not listed)"] += 1
        elif not spec.shaped(row):
            left_out["shape"] += 1
        else:
            eligible.append(row)
    eligible.sort(key=lambda row: sha256_hex(str(row_id(row)).encode("utf-8")))
    if len(eligible) < spec.count:
        raise SystemExit(f"{name}: {len(eligible)} eligible rows, {spec.count} wanted")
    return eligible[: spec.count], left_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", choices=sorted(SLICES))
    parser.add_argument("source", type=Path, help="the source file (see the module docstring)")
    parser.add_argument("--out", type=Path, help="default: evals/data/fresh/<slice file>")
    parser.add_argument(
        "--shared",
        type=Path,
        default=SHARED_DATA,
        help="the shared evaluation data to stay disjoint from (default: ../shared/data)",
    )
    args = parser.parse_args(argv)
    spec = SLICES[args.dataset]
    shared = args.shared if args.shared.is_dir() else None
    if shared is None:
        print(f"note: {args.shared} absent; only the recorded exclusions apply", file=sys.stderr)
    rows, left_out = draw(args.dataset, args.source, shared)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    out = args.out or HERE / spec.out
    out.write_text(text, encoding="utf-8")
    digest = sha256_hex(text.encode("utf-8"))
    types = Counter(spec.type_of(row) for row in rows)
    print(f"{out.name}: {len(rows)} rows; by type {dict(sorted(types.items()))}")
    print(f"left out of the source: {dict(sorted(left_out.items()))}")
    print(f"sha256 {digest}")
    if spec.result_sha256 and digest != spec.result_sha256:
        print(f"differs from the recorded draw ({spec.result_sha256})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
