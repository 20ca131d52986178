-- Site-wide stats (`GET /api/v1/stats`) read the clicks of every link over
-- a range of hours: without this index that is a scan of the whole table.
CREATE INDEX IF NOT EXISTS clicks_by_hour ON clicks (hour);
