#!/usr/bin/env bash
# Rewrites Tests/reliability/corpus: the hostile-input corpus (HostileCorpus.swift) as one file
# per case, signed with the fixtures' test PKI (Fixtures/pki), plus manifest.tsv (file, name,
# expected codes, environment, kind, note) and the configurations it is checked under.
# Inputs over 1 MB (the 5 MB line) are listed in the manifest but generated at test time only.
#
#   Tests/reliability/make-corpus.sh            # then: git diff --stat Tests/reliability/corpus
#
# The suite checks the committed files against the manifest through the command line
# (Reliability.BadInput/committedCorpusMatchesManifest).
set -euo pipefail
cd "$(dirname "$0")/../.."
RELIABILITY_WRITE_CORPUS=1 swift test --scratch-path "${SCRATCH_PATH:-.build-rel}" \
  --filter 'Reliability.BadInput/committedCorpusIsCurrent'
ls Tests/reliability/corpus | wc -l
