import { TollgateError } from '../../common/errors.js';
import { MAX_LISTED_OBJECTS, MAX_TEXT_BYTES } from './object-store.js';

export const folderTooLarge = (uri: string): TollgateError =>
  new TollgateError(
    'folder_too_large',
    `${uri} holds more than ${MAX_LISTED_OBJECTS} objects; point storageUri at the model's own folder`,
  );

export const fileTooLarge = (where: string): TollgateError =>
  new TollgateError(
    'file_too_large',
    `${where} is larger than ${MAX_TEXT_BYTES} bytes; a model's settings file is a few KiB`,
  );
