-- The operator's inbox (inbox/) lists submissions newest first, filtered by form or by
-- status, with a keyset cursor on (created_at, id): these indexes serve each filter in
-- that order, so a page costs the same at any depth.
CREATE INDEX submissions_form_created ON submissions (form, created_at, id);
CREATE INDEX submissions_status_created ON submissions (status, created_at, id);
