#!/usr/bin/env python3
"""Checks Sources/App/API/Resources/openapi.json: valid JSON, no duplicate keys, every local `$ref` resolves.

With `--against-git REV` it also extracts the document that was the Swift raw string
`OpenAPIDocument.json` in REV:Sources/App/API/Controllers/OpenAPIDocument.swift, dereferences both documents
(siblings of a `$ref` override the members of the object it names) and fails unless they are equal,
apart from components that only the new document has, which must be referenced from it.
Python 3 standard library only. Run from anywhere: `scripts/openapi_check.py --against-git HEAD`.
"""
import argparse, json, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENT = 'Sources/App/API/Resources/openapi.json'
SWIFT = 'Sources/App/API/Controllers/OpenAPIDocument.swift'


def parse(text):
    def no_duplicates(pairs):
        keys = [key for key, _ in pairs]
        duplicates = sorted({key for key in keys if keys.count(key) > 1})
        if duplicates:
            raise ValueError(f'duplicate keys {duplicates}')
        return dict(pairs)
    return json.loads(text, object_pairs_hook=no_duplicates)


def swift_raw_string(source):
    """The content of `static let json = #\"\"\"…\"\"\"#`: the closing line's indentation is stripped."""
    match = re.search(r'#"""\n(.*?)\n([ \t]*)"""#', source, re.S)
    body, indent = match.group(1), match.group(2)
    assert all(line.startswith(indent) or not line.strip() for line in body.split('\n'))
    return '\n'.join(line[len(indent):] for line in body.split('\n'))


def pointer(path):
    return '/' + '/'.join(str(key).replace('~', '~0').replace('/', '~1') for key in path)


def resolve(document, reference):
    if not reference.startswith('#/'):
        raise ValueError(f'not a local reference: {reference}')
    node = document
    for token in reference[2:].split('/'):
        token = token.replace('~1', '/').replace('~0', '~')
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise ValueError(f'{reference} does not resolve')
    return node


def dereference(document, node, expanding=()):
    """`node` with every `$ref` replaced by what it names, its siblings merged over that."""
    if isinstance(node, list):
        return [dereference(document, item, expanding) for item in node]
    if not isinstance(node, dict):
        return node
    members = {key: dereference(document, value, expanding) for key, value in node.items() if key != '$ref'}
    if '$ref' not in node:
        return members
    reference = node['$ref']
    if reference in expanding:
        raise ValueError(f'{reference} refers to itself')
    target = dereference(document, resolve(document, reference), expanding + (reference,))
    if not isinstance(target, dict):
        raise ValueError(f'{reference} does not name an object')
    return {**target, **members}


def differences(a, b, path=()):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [key for key in b if key not in a]:
            if key not in a or key not in b:
                yield f'{pointer(path + (key,))}: only in {"new" if key in a else "original"}'
            else:
                yield from differences(a[key], b[key], path + (key,))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, path + (index,))
    elif a != b or type(a) is not type(b):
        yield f'{pointer(path)}: {json.dumps(b)[:60]} became {json.dumps(a)[:60]}'


def check(name, text):
    document = parse(text)
    expanded = dereference(document, document)
    references = text.count('"$ref"')
    print(f'{name}: valid JSON, no duplicate keys, {references} $refs, all resolve')
    return expanded


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--against-git', metavar='REV', help='compare with the Swift raw string in REV')
    arguments = parser.parse_args()
    with open(os.path.join(ROOT, DOCUMENT), encoding='utf-8') as file:
        text = file.read()
    new = check(DOCUMENT, text)
    if arguments.against_git:
        source = subprocess.run(['git', 'show', f'{arguments.against_git}:{SWIFT}'], cwd=ROOT, check=True,
                                capture_output=True, text=True, encoding='utf-8').stdout
        original = check(f'{arguments.against_git}:{SWIFT}', swift_raw_string(source))
        added = [(section, name) for section, members in new.get('components', {}).items() for name in members
                 if name not in original.get('components', {}).get(section, {})]
        for section, name in added:
            del new['components'][section][name]
            used = text.count(f'"#/components/{section}/{name}"')
            print(f'  added #/components/{section}/{name}, referenced {used} times')
            if not used:
                sys.exit(f'FAIL: #/components/{section}/{name} is not referenced')
        found = list(differences(new, original))
        for line in found:
            print(f'  {line}')
        if found:
            sys.exit(f'FAIL: the dereferenced documents differ at {len(found)} paths')
        print(f'OK: dereferenced, {DOCUMENT} equals {arguments.against_git}:{SWIFT}')


if __name__ == '__main__':
    try:
        main()
    except ValueError as error:
        sys.exit(f'FAIL: {error}')
