#!/usr/bin/env perl
# test/compare_outputs.pl: compare two runs of PostgreSQL's regression suite,
# one with gpujoin off (BASE) and one with GPU joins forced (GPU), file by file
#
#   test/compare_outputs.pl [--verbose] BASE_RESULTS_DIR GPU_RESULTS_DIR
#
# The same SQL ran twice, so both outputs echo the same statements; what may
# differ is what the plans change and PostgreSQL does not promise:
#
#   plan text      a result whose column is "QUERY PLAN", or of a statement
#                  that calls EXPLAIN or a function parsing it
#   row order      the same rows, in another order, where the statement has
#                  no ORDER BY at its top level; under an ORDER BY, only the
#                  order of rows with equal sort keys (checked when the sort
#                  keys are output columns, by name or number)
#   notice order   the same NOTICE/WARNING/INFO lines (with their DETAIL,
#                  CONTEXT and HINT) in another order, as row triggers or
#                  functions raise them for rows that come in another order
#
# Everything else fails: a row in one result and not in the other, an error
# or a notice that only one run shows, a lost connection (a crash), a file
# that only one run has.  Each output file is cut into items, a result table
# (header, separator, rows, "(N rows)") or one line of anything else; the
# two lists of items are aligned with diff(1), tables by their header, and
# then each aligned pair of tables is compared.
#
# Prints one line per file that differs in a way that fails (with the
# differing items), and a closing line:
#   files N, identical N, plan text N, row order N, notice order N, failed N
# The exit status is 0 when no file failed, 1 otherwise, 2 on a usage error.
use strict;
use warnings;
use File::Temp qw(tempdir);

my $verbose = 0;
while (@ARGV && $ARGV[0] eq '--verbose')
{
	$verbose++;
	shift @ARGV;
}
die "usage: $0 [--verbose] BASE_RESULTS_DIR GPU_RESULTS_DIR\n" unless @ARGV == 2;
my ($base_dir, $gpu_dir) = @ARGV;

my $tmp = tempdir(CLEANUP => 1);
my %count = (files => 0, identical => 0, plan => 0, order => 0, notice => 0, failed => 0);

# The items of one output file: result tables, blocks of messages (a run
# of NOTICE, INFO ... lines with their DETAIL, CONTEXT and continuation
# lines) and single lines of anything else
sub read_items
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!\n";
	my @lines = <$fh>;
	close $fh;
	chomp @lines;

	my @items;
	my $context = '';			# echoed input since the last table
	for (my $i = 0; $i < @lines; $i++)
	{
		my $footer;

		# a table: a header and a separator line, rows, then "(N rows)"; in
		# psql's aligned format every header and row line starts with a space
		if (table_starts(\@lines, $i))
		{
			for (my $j = $i + 2; $j < @lines; $j++)
			{
				if ($lines[$j] =~ /^\(\d+ rows?\)$/)
				{
					$footer = $j;
					last;
				}
				last unless $lines[$j] =~ /^ /;
			}
		}
		if (defined $footer)
		{
			push @items, {
				kind => 'table',
				header => $lines[$i],
				rows => [ @lines[ $i + 2 .. $footer - 1 ] ],
				footer => $lines[$footer],
				statement => last_statement($context),
				line => $i + 1,
			};
			$context = '';
			$i = $footer;
		}
		elsif (is_message($lines[$i]))
		{
			my $j = $i;
			# continuation lines are indented, as a table's header is: a
			# table right after the messages (RETURNING rows after the
			# notices of row triggers) is not one of them
			$j++ while $j + 1 < @lines && (is_message($lines[$j + 1]) ||
				($lines[$j + 1] =~ /^\s+\S/ && !table_starts(\@lines, $j + 1)));
			push @items, {
				kind => 'messages',
				lines => [ @lines[ $i .. $j ] ],
				statement => last_statement($context),
				line => $i + 1,
			};
			$i = $j;
		}
		else
		{
			push @items, { kind => 'line', text => $lines[$i], line => $i + 1 };
			$context .= $lines[$i] . "\n";
		}
	}
	return \@items;
}

# Does a table start at line i: an indented header, then a separator line?
sub table_starts
{
	my ($lines, $i) = @_;
	return $lines->[$i] =~ /^ / && $i + 1 < @$lines && $lines->[$i + 1] =~ /^-+(\+-+)*$/;
}

# An item's signature, by which the two runs' items are aligned: a table's
# columns, a block of messages as the multiset of its lines, a line itself
sub signature
{
	my ($item) = @_;
	return "\x01TABLE " . join('|', header_columns($item->{header})) if $item->{kind} eq 'table';
	return "\x02MESSAGES " . join("\x1f", sort @{ $item->{lines} }) if $item->{kind} eq 'messages';
	return $item->{text} =~ s/\r//gr;
}

# How an item shows in a report
sub describe
{
	my ($item) = @_;
	return "(table) " . $item->{header} if $item->{kind} eq 'table';
	return join("\n      ", @{ $item->{lines} }) if $item->{kind} eq 'messages';
	return $item->{text};
}

# Is a line one psql prints for a server message (or its position marker)
# rather than an echo of the input?
sub is_message_line
{
	my ($line) = @_;
	return $line =~ /^(ERROR|WARNING|NOTICE|INFO|DETAIL|CONTEXT|HINT|LOCATION|STATEMENT|FATAL|PANIC):  / ||
		$line =~ /^LINE \d+: / || $line =~ /^\s*\^\s*$/;
}

# Split SQL text into statements at semicolons outside quotes, dollar
# quotes and comments; each statement lower case, comments removed
sub split_statements
{
	my ($text) = @_;
	my @stmts;
	my $cur = '';
	my $n = length $text;
	my $i = 0;
	while ($i < $n)
	{
		my $c = substr($text, $i, 1);
		my $rest = substr($text, $i, 2);
		if ($rest eq '--')
		{
			my $e = index($text, "\n", $i);
			$e = $n if $e < 0;
			$i = $e;
			next;
		}
		if ($rest eq '/*')
		{
			my $depth = 0;
			while ($i < $n)
			{
				if (substr($text, $i, 2) eq '/*') { $depth++; $i += 2; next; }
				if (substr($text, $i, 2) eq '*/') { $depth--; $i += 2; last if $depth == 0; next; }
				$i++;
			}
			$cur .= ' ';
			next;
		}
		if ($c eq "'" || $c eq '"')
		{
			my $e = $i + 1;
			while ($e < $n)
			{
				if (substr($text, $e, 1) eq $c)
				{
					last unless substr($text, $e + 1, 1) eq $c;
					$e++;
				}
				$e++;
			}
			$cur .= substr($text, $i, $e + 1 - $i);
			$i = $e + 1;
			next;
		}
		if ($c eq '$' && substr($text, $i) =~ /^(\$[A-Za-z_]*\$)/)
		{
			my $tag = $1;
			my $e = index($text, $tag, $i + length $tag);
			$e = $n - length $tag if $e < 0;
			$cur .= substr($text, $i, $e + length($tag) - $i);
			$i = $e + length $tag;
			next;
		}
		if ($c eq ';')
		{
			push @stmts, lc $cur if $cur =~ /\S/;
			$cur = '';
			$i++;
			next;
		}
		$cur .= $c;
		$i++;
	}
	push @stmts, lc $cur if $cur =~ /\S/;
	return @stmts;
}

# The statement a result belongs to: the last one in the echoed text before
# it, messages left out
sub last_statement
{
	my ($text) = @_;
	$text = join "\n", grep { !is_message_line($_) } split /\n/, $text;
	my @stmts = split_statements($text);
	return @stmts ? $stmts[-1] : '';
}

# Names of the functions a file creates that run EXPLAIN (their results
# are plan text)
sub explain_functions
{
	my ($items) = @_;
	my $text = join "\n", map { $_->{kind} eq 'line' ? $_->{text} : '' } @$items;
	$text = join "\n", grep { !is_message_line($_) } split /\n/, $text;
	my @names;
	for my $stmt (split_statements($text))
	{
		next unless $stmt =~ /create\s+(?:or\s+replace\s+)?function\s+(?:[\w"]+\.)?"?(\w+)"?\s*\(/;
		my $name = $1;
		push @names, $name if $stmt =~ /\bexplain\b/;
	}
	return @names;
}

# Does a statement show plan text: EXPLAIN, or a function that runs it?
sub is_plan_statement
{
	my ($stmt, $explain_functions) = @_;
	return 1 if $stmt =~ /\bexplain\b/;
	for my $f (@$explain_functions)
	{
		return 1 if $stmt =~ /\b\Q$f\E\s*\(/;
	}
	return 0;
}

# The top-level ORDER BY list of a statement (outside parentheses), or undef
sub top_order_by
{
	my ($stmt) = @_;
	my $depth = 0;
	my $flat = '';
	# blank out everything inside parentheses and string literals
	my $in_string = 0;
	for my $c (split //, $stmt)
	{
		if ($in_string)
		{
			$in_string = 0 if $c eq "'";
			$flat .= ' ';
			next;
		}
		if ($c eq "'") { $in_string = 1; $flat .= ' '; next; }
		if ($c eq '(') { $depth++; $flat .= ' '; next; }
		if ($c eq ')') { $depth-- if $depth > 0; $flat .= ' '; next; }
		$flat .= $depth > 0 ? ' ' : $c;
	}
	return undef unless $flat =~ /\border\s+by\b(.*)$/s;
	my $list = $1;
	$list =~ s/\b(limit|offset|fetch|for\s+update|for\s+share|for\s+no\s+key|for\s+key)\b.*$//s;
	return $list;
}

# The output columns of a table, by its header
sub header_columns
{
	my ($header) = @_;
	return map { my $c = $_; $c =~ s/^\s+|\s+$//g; $c } split /\|/, $header, -1;
}

# Cells of a row line, trimmed
sub row_cells
{
	my ($row) = @_;
	return map { my $c = $_; $c =~ s/^\s+|\s+$//g; $c } split /\|/, $row, -1;
}

# Does the GPU run's table differ from the base run's only in the order of
# rows with equal sort keys?  undef when the sort keys are not output
# columns (then we cannot tell)
sub only_ties_reordered
{
	my ($a, $b, $order_by) = @_;
	my @cols = header_columns($a->{header});
	my @keys;
	for my $item (split /,/, $order_by)
	{
		$item =~ s/^\s+|\s+$//g;
		$item =~ s/\s+(asc|desc)\b.*$//;
		$item =~ s/\s+nulls\s+(first|last)$//;
		$item =~ s/\s+using\s+\S+$//;
		my $index;
		if ($item =~ /^\d+$/)
		{
			$index = $item - 1;
		}
		else
		{
			$item =~ s/^.*\.//;			# t.col: the column name
			$item =~ s/^"(.*)"$/$1/;
			for my $c (0 .. $#cols)
			{
				$index = $c if $cols[$c] eq $item;
			}
		}
		return undef unless defined $index && $index >= 0 && $index < @cols;
		push @keys, $index;
	}
	return undef unless @keys;
	# multi-line values make multi-line rows: leave those to the caller
	for my $row (@{ $a->{rows} }, @{ $b->{rows} })
	{
		return undef if $row =~ /\+$/;
	}
	my $keyseq = sub {
		my ($t) = @_;
		return join "\n", map { my @c = row_cells($_); join "\x1f", map { $c[$_] // '' } @keys } @{ $t->{rows} };
	};
	return $keyseq->($a) eq $keyseq->($b);
}

sub same_multiset
{
	my ($x, $y) = @_;
	return 0 unless @$x == @$y;
	my @sx = sort @$x;
	my @sy = sort @$y;
	for my $i (0 .. $#sx)
	{
		return 0 unless $sx[$i] eq $sy[$i];
	}
	return 1;
}

# Compare one pair of aligned tables: '' when identical, else the kind of
# difference ('plan', 'order') or a failure message
sub compare_tables
{
	my ($a, $b, $explain_functions) = @_;
	my $ra = join "\n", @{ $a->{rows} };
	my $rb = join "\n", @{ $b->{rows} };
	return '' if $ra eq $rb && $a->{footer} eq $b->{footer};
	return 'plan' if $a->{header} =~ /QUERY PLAN/ || is_plan_statement($a->{statement}, $explain_functions);
	if ($a->{footer} eq $b->{footer} && same_multiset($a->{rows}, $b->{rows}))
	{
		my $order_by = top_order_by($a->{statement});
		return 'order' unless defined $order_by;
		my $ties = only_ties_reordered($a, $b, $order_by);
		return 'order' if $ties;
		return defined $ties ? 'rows out of ORDER BY order' :
			'rows in another order under an ORDER BY whose keys are not output columns';
	}
	return 'different rows';
}

# A line that starts a server message
sub is_message
{
	my ($line) = @_;
	return $line =~ /^(NOTICE|WARNING|INFO|DETAIL|CONTEXT|HINT|LOCATION|ERROR|FATAL|PANIC):  /;
}

# Do messages show plan text (EXPLAIN output a function raised)?
sub shows_plan
{
	my (@items) = @_;
	for my $item (@items)
	{
		for my $l (@{ $item->{lines} })
		{
			return 1 if $l =~ /^\s*->  / || $l =~ /^(INFO|NOTICE):  (Custom Scan|Seq Scan|Index|Bitmap|Nested Loop|Hash|Merge|Aggregate|Sort|Append|Result|Gather|Materialize|Memoize|Limit|Unique|Subquery Scan|Function Scan|Named Tuplestore Scan)\b/;
		}
	}
	return 0;
}

# Compare one file of the two runs; returns the failures (text) and the
# kinds of accepted differences it has
sub compare_file
{
	my ($name) = @_;
	my $ia = read_items("$base_dir/$name");
	my $ib = read_items("$gpu_dir/$name");
	my @explain_functions = explain_functions($ia);
	my (@fail, %kinds);

	# align the items by signature with diff(1)
	for my $pair ([ $ia, "$tmp/a" ], [ $ib, "$tmp/b" ])
	{
		open(my $fh, '>', $pair->[1]) or die "cannot write $pair->[1]: $!\n";
		print $fh signature($_) =~ s/\n/\x1e/gr, "\n" for @{ $pair->[0] };
		close $fh;
	}
	open(my $diff, '-|', 'diff', "$tmp/a", "$tmp/b") or die "cannot run diff: $!\n";
	my @hunks;
	while (my $l = <$diff>)
	{
		next unless $l =~ /^(\d+)(?:,(\d+))?([acd])(\d+)(?:,(\d+))?$/;
		my ($a1, $a2, $op, $b1, $b2) = ($1, $2 // $1, $3, $4, $5 // $4);
		($a1, $a2) = ($a1 + 1, $a1) if $op eq 'a';	# nothing deleted
		($b1, $b2) = ($b1 + 1, $b1) if $op eq 'd';	# nothing added
		push @hunks, [ $a1 - 1, $a2 - 1, $b1 - 1, $b2 - 1 ];
	}
	close $diff;

	# the items between the hunks are aligned one to one
	my ($pa, $pb) = (0, 0);
	my @pairs;
	for my $h (@hunks, [ scalar(@$ia), scalar(@$ia) - 1, scalar(@$ib), scalar(@$ib) - 1 ])
	{
		my ($a1, $a2, $b1, $b2) = @$h;
		while ($pa < $a1 && $pb < $b1)
		{
			push @pairs, [ $ia->[$pa++], $ib->[$pb++] ];
		}
		last if $a1 >= @$ia && $b1 >= @$ib;
		my @da = @{$ia}[ $a1 .. $a2 ];
		my @db = @{$ib}[ $b1 .. $b2 ];
		$pa = $a2 + 1;
		$pb = $b2 + 1;

		# messages that show plan text (a function that raises EXPLAIN's
		# output), on both sides
		if (@da && @db && !grep({ $_->{kind} ne 'messages' } @da, @db) &&
			!grep({ /^(ERROR|FATAL|PANIC):/ } map { @{ $_->{lines} } } @da, @db) &&
			shows_plan(@da) && shows_plan(@db))
		{
			$kinds{plan}++;
			next;
		}
		my @lines = ((map { "- " . describe($_) } @da), (map { "+ " . describe($_) } @db));
		my @gpu_lines = map { $_->{kind} eq 'messages' ? @{ $_->{lines} } : $_->{kind} eq 'line' ? $_->{text} : () } @db;
		my $why = (grep { /connection to server was lost|server closed the connection/ } @gpu_lines) ?
			'the server crashed or closed the connection' :
			(grep { /^(ERROR|FATAL|PANIC):/ } @gpu_lines) ? 'an error only with GPU joins' :
			(grep { is_message($_) } @gpu_lines) ? 'a message only with GPU joins' : 'different output';
		my $at_a = $da[0] // $ia->[$a1 - 1] // { line => 0 };
		my $at_b = $db[0] // $ib->[$b1 - 1] // { line => 0 };
		push @fail, sprintf("  line %d (base) / %d (gpu): %s\n%s", $at_a->{line}, $at_b->{line}, $why,
			join('', map { "    $_\n" } @lines[ 0 .. ($#lines < 11 ? $#lines : 11) ]));
	}

	for my $p (@pairs)
	{
		my ($a, $b) = @$p;
		if ($a->{kind} eq 'messages')
		{
			# equal signatures: the same messages, maybe in another order
			$kinds{notice}++ if join("\n", @{ $a->{lines} }) ne join("\n", @{ $b->{lines} });
			next;
		}
		next unless $a->{kind} eq 'table';
		my $verdict = compare_tables($a, $b, \@explain_functions);
		next if $verdict eq '';
		if ($verdict eq 'plan' || $verdict eq 'order')
		{
			$kinds{$verdict}++;
			printf "  %s%s, line %d: %s\n", $verdict,
				($verdict eq 'order' && defined top_order_by($a->{statement})) ? ' (equal sort keys)' : '',
				$b->{line}, substr($a->{statement} =~ s/\s+/ /gr, 0, 160)
				if $verbose > 1;
			next;
		}
		my %inb;
		$inb{$_}++ for @{ $b->{rows} };
		my (@only_a, @only_b);
		for my $r (@{ $a->{rows} })
		{
			if ($inb{$r}) { $inb{$r}--; } else { push @only_a, $r; }
		}
		my %ina;
		$ina{$_}++ for @{ $a->{rows} };
		for my $r (@{ $b->{rows} })
		{
			if ($ina{$r}) { $ina{$r}--; } else { push @only_b, $r; }
		}
		my @lines = ((map { "- $_" } @only_a), (map { "+ $_" } @only_b));
		@lines = ("(the same rows in another order)") unless @lines;
		push @fail, sprintf("  line %d (base) / %d (gpu): %s: %s %s / %s\n    %s\n%s",
			$a->{line}, $b->{line}, $verdict, $a->{header}, $a->{footer}, $b->{footer},
			substr($a->{statement} =~ s/\s+/ /gr, 0, 300),
			join('', map { "    $_\n" } @lines[ 0 .. ($#lines < 11 ? $#lines : 11) ]));
	}
	return (\@fail, \%kinds);
}

opendir(my $dh, $base_dir) or die "cannot read $base_dir: $!\n";
my @names = sort grep { /\.out$/ } readdir $dh;
closedir $dh;
opendir($dh, $gpu_dir) or die "cannot read $gpu_dir: $!\n";
my %gpu_names = map { $_ => 1 } grep { /\.out$/ } readdir $dh;
closedir $dh;

for my $name (sort keys %gpu_names)
{
	next if -f "$base_dir/$name";
	$count{files}++;
	$count{failed}++;
	print "$name: only in the GPU run\n";
}
for my $name (@names)
{
	$count{files}++;
	unless ($gpu_names{$name})
	{
		$count{failed}++;
		print "$name: missing from the GPU run\n";
		next;
	}
	my ($fail, $kinds) = compare_file($name);
	if (@$fail)
	{
		$count{failed}++;
		print "$name: FAILED\n", @$fail;
	}
	elsif (!%$kinds)
	{
		$count{identical}++;
	}
	else
	{
		$count{$_}++ for keys %$kinds;
		print "$name: ", join(', ', map { "$_ $kinds->{$_}" } sort keys %$kinds), "\n" if $verbose;
	}
}

printf "files %d, identical %d, plan text %d, row order %d, notice order %d, failed %d\n",
	@count{qw(files identical plan order notice failed)};
exit($count{failed} ? 1 : 0);
