# read_text_file, read_media_file, list_directory, directory_tree,
# search_files, get_file_info: one `path`.
package tools.filesystem.path

import rego.v1

import data.root

deny contains root.outside(input.arguments.path) if not root.inside(input.arguments.path)
