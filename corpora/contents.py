"""What a built corpus holds: its documents (ids, titles, entry counts) read back from its collection.

A corpus directory (:mod:`corpora.build`) keeps every entry in ``collection/docs.jsonl``, written document by
document, so one pass in order tells the documents apart without holding them all: a new ``doc_id`` starts a
new document. Only the first ``limit`` documents are kept in full; the totals cover the whole corpus.

A directory without a collection that holds a Lucene index (one built by Pyserini's own CLI) is listed from the
index's stored fields instead (:mod:`corpora.index_contents`); that starts the JVM.
"""

from __future__ import annotations

import json
from pathlib import Path

from evigraph.corpora.summaries import CorpusContents, DocumentSummary, document_id, preview
from evigraph.errors import ConfigError, InputDataError

__all__ = ("CorpusContents", "DocumentSummary", "corpus_contents")


def _manifest(directory: Path) -> dict[str, object]:
    path = directory / "manifest.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputDataError(str(path), error.lineno, f"not valid JSON ({error.msg})") from None
    return data if isinstance(data, dict) else {}


def corpus_contents(directory: str | Path, *, name: str, limit: int | None = None) -> CorpusContents:
    """The documents of the corpus built in ``directory`` (the first ``limit`` in full; ``None``: all).

    A directory with no collection but a Lucene index (``directory`` itself or ``directory/index``) is listed
    from the index (:func:`corpora.index_contents.index_contents`).

    Raises:
        ConfigError: ``directory`` holds neither a collection nor a Lucene index, or the index cannot be read.
        InputDataError: a collection line that is not an entry (``file:line``).
    """
    directory = Path(directory)
    collection = directory / "collection" / "docs.jsonl"
    if not collection.is_file():
        from evigraph.corpora.index_contents import index_contents, lucene_index_dir

        index_dir = lucene_index_dir(directory)
        if index_dir is None:
            raise ConfigError(
                f"{directory} is neither a corpus directory (it has no collection/docs.jsonl, which "
                "`evigraph corpus build` writes) nor a Lucene index (it has no segments_N file)"
            )
        return index_contents(index_dir, name=name, limit=limit)
    shown: list[DocumentSummary] = []
    documents = entries = characters = 0
    current: str | None = None
    summary: DocumentSummary | None = None
    with collection.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                entry_id, text = str(record["id"]), record["contents"]
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise InputDataError(str(collection), number, f"not a corpus entry ({error})") from None
            entries += 1
            characters += len(text)
            doc_id = document_id(record, entry_id)
            if doc_id != current:  # entries are written document by document
                current = doc_id
                documents += 1
                if limit is None or len(shown) < limit:
                    title = record.get("title") or None
                    summary = DocumentSummary(
                        id=doc_id,
                        title=title,
                        entries=0,
                        characters=0,
                        first_entry=entry_id,
                        preview=preview(text),
                    )
                    shown.append(summary)
                else:
                    summary = None
            if summary is not None:
                summary.entries += 1
                summary.characters = (summary.characters or 0) + len(text)
    manifest = _manifest(directory)
    params = manifest.get("params")
    group = params.get("group_sentences") if isinstance(params, dict) else None
    empty = manifest.get("empty_documents")
    return CorpusContents(
        name=name,
        path=str(directory),
        documents=documents,
        entries=entries,
        characters=characters,
        group_sentences=group if isinstance(group, int) else None,
        empty_documents=[str(e) for e in empty] if isinstance(empty, list) else [],
        shown=shown,
    )
