-- Which docsync a hub needs. A step that changes what devices must send or read says so in its
-- own row (devices_from = its version), and a device that does not know that step refuses in one
-- line, "this hub needs a newer docsync", instead of failing query by query. Devices from before
-- this step cannot read the column; the rule holds from here on.
ALTER TABLE docsync.migrations ADD COLUMN devices_from integer NOT NULL DEFAULT 0;
-- Step 12 keyed objects by account number: devices that do not know it cannot read objects.
UPDATE docsync.migrations SET devices_from = 12 WHERE version = 12;
