/*
 * board_files.h - a glob source's files on the status board: its totals,
 * and the files most behind (board.c has the rest of the board).
 */
#ifndef WEIR_DAEMON_BOARD_FILES_H
#define WEIR_DAEMON_BOARD_FILES_H

#include "run/series.h"
#include "run/text.h"

/* After the table: a paragraph per glob pipeline. */
void board_files_text(struct text *t, const struct series *snap);
/* In a pipeline's JSON object: "files":{...}, with its comma, or nothing
 * when the pipeline's source is not a glob. */
void board_files_json(struct text *t, const struct files_num *f);

#endif
