-- Live links through any coordinator (DESIGN §11): each runner says where the others reach it
-- (ACTION_SERVICE_INTERNAL_URL); a live view opened elsewhere is proxied to the one holding the page.
ALTER TABLE runners ADD COLUMN internal_url text;
